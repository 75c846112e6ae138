"""Word lists for the demo corpus grammar, written for this project.

Per-topic lexicons (a "book" subject in reading mode, a conversation subject in conversation
mode) and the shared vocabulary: function-word frames, times, evaluations, conversational
fillers and everyday topics. Notation:

- nouns: countable singulars; an irregular plural follows a slash (``knife/knives``).
- actions: verb phrases; the verb's past and -ing forms follow slashes when they are not
  regular (``trim/trimmed/trimming the sails``, ``take/took the helm``); a regular verb
  is written alone (``check the rigging``).
- places and times: complete phrases.
"""

from __future__ import annotations

TOPICS = {
    "sailing": dict(
        nouns="anchor mast rudder sail harbour lighthouse buoy compass tiller keel hull mooring "
        "dinghy schooner ferry jetty chart lantern rope/ropes knot deck cabin oar wave tide/tides",
        adjectives="salty weathered wooden narrow sturdy rusty leaky seaworthy tarred slippery",
        people="skipper deckhand harbour_master navigator boatswain lighthouse_keeper ferryman",
        places="in the harbour|off the rocky coast|beyond the breakwater|near the lighthouse|"
        "along the quay|out in the open sea|below deck|at the mouth of the estuary",
        actions="trim/trimmed/trimming the sails|haul/hauled the anchor|coil/coiled the wet ropes|"
        "check/checked the charts|take/took/taking the helm|scrub/scrubbed/scrubbing the deck|"
        "reef/reefed the mainsail|tie/tied/tying a bowline knot|row/rowed ashore|"
        "plot/plotted/plotting a course|bail/bailed out the dinghy|hoist/hoisted the flag|"
        "drop/dropped/dropping anchor|read/read the tide tables|steer/steered into the wind",
    ),
    "cooking": dict(
        nouns="saucepan oven recipe onion loaf/loaves ladle skillet spoon knife/knives "
        "casserole dumpling cupboard apron kettle pie stew/stews tart cutlet",
        adjectives="crisp golden savoury tender spicy buttery fragrant bitter steaming burnt",
        people="cook baker butcher pastry_chef kitchen_maid grocer waiter",
        places="in the kitchen|by the stove|at the long table|in the larder|beside the oven|"
        "at the market stall|in the scullery|near the bread bin",
        actions="knead/kneaded the dough|peel/peeled the potatoes|simmer/simmered the broth|"
        "season/seasoned the stew|chop/chopped/chopping the onions|bake/baked a loaf|"
        "whisk/whisked the eggs|roast/roasted the lamb|stir/stirred/stirring the sauce|"
        "grate/grated the cheese|slice/sliced the bread|taste/tasted the soup|"
        "fry/fried/frying the fish|sift/sifted the flour|set/set/setting the table",
    ),
    "astronomy": dict(
        nouns="telescope planet comet galaxy nebula meteor eclipse orbit crater star/stars "
        "lens/lenses observatory asteroid moon constellation satellite horizon sky/skies",
        adjectives="distant faint luminous celestial lunar solar orbital bright dim cosmic",
        people="astronomer stargazer observer navigator professor technician",
        places="at the observatory|on the roof|under the open sky|above the horizon|"
        "behind the clouds|in the southern sky|beyond the rings of Saturn|near the pole star",
        actions="polish/polished the mirror|align/aligned the telescope|map/mapped/mapping the craters|"
        "track/tracked the comet|measure/measured the parallax|record/recorded the eclipse|"
        "focus/focused the lens|count/counted the meteors|sketch/sketched the nebula|"
        "name/named a new star|calculate/calculated the orbit|scan/scanned/scanning the sky|"
        "photograph/photographed the moon|watch/watched the planets rise",
    ),
    "gardening": dict(
        nouns="trowel seedling hedge rosebush greenhouse compost_heap flowerbed wheelbarrow "
        "spade rake tulip bulb/bulbs orchard vine/vines shed lawn daisy/daisies "
        "beetroot cabbage",
        adjectives="leafy blooming thorny muddy fertile overgrown fragrant wilted sunny shady",
        people="gardener groundsman florist nurseryman botanist allotment_keeper",
        places="in the greenhouse|along the garden wall|under the apple trees|in the vegetable patch|"
        "behind the potting shed|by the pond|in the walled garden|on the allotment",
        actions="prune/pruned the roses|water/watered the seedlings|dig/dug/digging the borders|"
        "weed/weeded the flowerbeds|plant/planted the tulips|rake/raked the leaves|"
        "mow/mowed the lawn|trim/trimmed/trimming the hedge|sow/sowed the seeds|"
        "turn/turned the compost|pick/picked the apples|stake/staked the beans|"
        "repot/repotted/repotting the ferns|spread/spread the mulch",
    ),
    "railways": dict(
        nouns="locomotive carriage platform signal_box timetable engine tunnel viaduct "
        "station ticket junction whistle boiler siding coal_tender "
        "brake_van railway_line sleeper",
        adjectives="steam-driven punctual crowded smoky rattling late express narrow-gauge sooty "
        "iron",
        people="stationmaster engine_driver signalman guard porter ticket_inspector fireman",
        places="on platform four|at the junction|through the long tunnel|across the viaduct|"
        "in the signal box|at the terminus|along the branch line|in the engine shed",
        actions="stoke/stoked the boiler|punch/punched the tickets|wave/waved the green flag|"
        "check/checked the timetable|couple/coupled the carriages|switch/switched the points|"
        "blow/blew the whistle|oil/oiled the wheels|load/loaded the mail bags|"
        "signal/signalled/signalling the express|shovel/shovelled/shovelling more coal|"
        "catch/caught/catching the night train|inspect/inspected the brakes",
    ),
    "medicine": dict(
        nouns="stethoscope bandage ward clinic fever pulse syringe prescription splint "
        "thermometer remedy wound patient symptom dose/doses tablet ambulance "
        "infirmary",
        adjectives="feverish sterile chronic contagious swollen pale antiseptic clinical painful "
        "bitter",
        people="doctor nurse surgeon apothecary midwife pharmacist physician",
        places="in the ward|at the infirmary|in the surgery|beside the bed|at the dispensary|"
        "in the waiting room|in the operating theatre|at the village clinic",
        actions="take/took/taking a pulse|dress/dressed the wound|set/set/setting the broken arm|"
        "write/wrote/writing a prescription|measure/measured the fever|sterilise/sterilised the tools|"
        "listen/listened to the chest|mix/mixed the ointment|examine/examined the patient|"
        "clean/cleaned the cut|check/checked the dosage|splint/splinted the leg",
    ),
    "chess": dict(
        nouns="bishop knight rook pawn queen king gambit endgame opening checkmate "
        "chessboard tournament clock square sacrifice stalemate defence move/moves",
        adjectives="clever bold reckless cautious decisive drawn positional tactical quiet "
        "brilliant",
        people="grandmaster opponent champion challenger arbiter club_secretary",
        places="at the chess club|in the tournament hall|on the back rank|across the board|"
        "in the final round|on the long diagonal|at the corner table|in the coffee house by the park",
        actions="castle/castled early|sacrifice/sacrificed the queen|promote/promoted the pawn|"
        "study/studied the endgame|press/pressed the clock|offer/offered a draw|"
        "analyse/analysed the game|resign/resigned the match|open/opened with the king's pawn|"
        "defend/defended the weak square|pin/pinned/pinning the knight|trade/traded the rooks",
    ),
    "weather": dict(
        nouns="thunderstorm gale forecast barometer cloud/clouds rainbow "
        "hailstone snowdrift breeze heatwave downpour flood/floods puddle umbrella "
        "weathervane",
        adjectives="gusty chilly humid overcast misty sultry frosty stormy drizzly damp",
        people="forecaster meteorologist weatherman observer shepherd coastguard",
        places="over the hills|across the valley|along the coast|in the north|above the town|"
        "on the moors|at the weather station|over the sea",
        actions="read/read the barometer|record/recorded the rainfall|forecast/forecast a storm|"
        "watch/watched the clouds gather|measure/measured the wind|"
        "check/checked the thermometer|shelter/sheltered from the rain|"
        "clear/cleared the snow|warn/warned the fishermen|chart/charted the pressure",
    ),
    "music": dict(
        nouns="violin cello piano flute trumpet symphony melody chord concert orchestra "
        "rehearsal score sonata choir/choirs drum/drums harp lute tune/tunes overture",
        adjectives="melodic harmonious shrill mellow rhythmic solemn lively tuneful off-key "
        "haunting",
        people="conductor violinist organist composer pianist choirmaster cellist",
        places="in the concert hall|at the rehearsal|in the organ loft|on the bandstand|"
        "in the orchestra pit|at the music school|in the front row|backstage",
        actions="tune/tuned the violin|rehearse/rehearsed the overture|conduct/conducted the choir|"
        "compose/composed a sonata|play/played the scales|practise/practised the fugue|"
        "sing/sang/singing the chorus|polish/polished the trumpet|"
        "turn/turned the pages of the score|strike/struck/striking the first chord",
    ),
    "law": dict(
        nouns="courtroom verdict witness jury/juries judge/judges barrister lawsuit contract "
        "testimony appeal statute sentence alibi clause hearing "
        "defendant affidavit",
        adjectives="guilty innocent lawful binding unanimous sworn fraudulent legal solemn "
        "disputed",
        people="judge barrister solicitor clerk juror magistrate bailiff",
        places="in the courtroom|at the high court|in the judge's chambers|before the jury|"
        "in the witness box|at the solicitor's office|outside the courthouse|in the law library",
        actions="cross-examine/cross-examined the witness|draft/drafted the contract|"
        "deliver/delivered the verdict|file/filed an appeal|swear/swore/swearing the oath|"
        "read/read the statute|object/objected to the question|adjourn/adjourned the hearing|"
        "sign/signed the affidavit|review/reviewed the evidence|settle/settled the lawsuit",
    ),
    "farming": dict(
        nouns="tractor barn haystack plough/ploughs furrow pasture sheepdog heifer harvest "
        "silo paddock scarecrow trough fence/fences calf/calves lamb/lambs field/fields "
        "combine_harvester",
        adjectives="muddy fertile grazing fallow golden ripe dusty hardworking rolling damp",
        people="farmer shepherd farmhand dairymaid ploughman vet",
        places="in the top field|behind the barn|in the milking shed|along the hedgerow|"
        "in the lower paddock|by the old mill|on the hillside|at the cattle market",
        actions="plough/ploughed the field|milk/milked the cows|shear/sheared the sheep|"
        "mend/mended the fence|bale/baled the hay|feed/fed/feeding the pigs|"
        "harvest/harvested the barley|herd/herded the cattle|spread/spread the manure|"
        "drive/drove/driving the tractor|collect/collected the eggs|dig/dug/digging a ditch",
    ),
    "painting": dict(
        nouns="canvas easel palette brush/brushes portrait landscape gallery sketchbook "
        "watercolour frame/frames studio pigment mural still_life "
        "masterpiece",
        adjectives="vivid muted luminous abstract impressionist textured pastel gilded unfinished",
        people="painter art_dealer curator apprentice critic model",
        places="in the studio|at the gallery|by the north window|in the attic|at the art school|"
        "on the riverbank|in the museum|under the skylight",
        actions="stretch/stretched the canvas|mix/mixed the pigments|sketch/sketched the outline|"
        "varnish/varnished the portrait|frame/framed the landscape|clean/cleaned the brushes|"
        "prime/primed the board|shade/shaded the background|hang/hung/hanging the exhibition|"
        "restore/restored the old mural|paint/painted the harbour at dusk",
    ),
    "mountaineering": dict(
        nouns="summit ridge glacier crevasse ice_axe crampon harness rope/ropes carabiner "
        "tent/tents rucksack avalanche ledge peak snowfield boulder gully",
        adjectives="steep icy treacherous sheer rocky windswept frozen exposed jagged lofty",
        people="climber guide porter mountaineer expedition_leader rescuer",
        places="on the north face|below the summit|at base camp|across the glacier|"
        "along the knife-edge ridge|in the high pass|under the overhang|above the snow line",
        actions="fix/fixed the ropes|pitch/pitched the tent|cross/crossed the crevasse|"
        "belay/belayed the second climber|strap/strapped/strapping on the crampons|"
        "cut/cut/cutting steps in the ice|reach/reached the summit|"
        "pack/packed the rucksack|check/checked the harness|descend/descended the gully",
    ),
    "beekeeping": dict(
        nouns="beehive honeycomb smoker veil swarm queen_bee drone worker_bee frame/frames "
        "apiary honey_jar/honey_jars clover_field",
        adjectives="sticky golden buzzing waxy amber sweet swarming docile drowsy floral",
        people="beekeeper apiarist honey_merchant neighbour inspector",
        places="in the apiary|by the clover field|at the bottom of the orchard|in the honey shed|"
        "under the lime trees|near the heather|at the village fete|inside the hive",
        actions="light/lit/lighting the smoker|inspect/inspected the frames|"
        "spin/spun/spinning the honey|catch/caught/catching the swarm|mark/marked the queen|"
        "scrape/scraped the wax|wear/wore/wearing the veil|feed/fed/feeding the bees syrup|"
        "label/labelled/labelling the jars|split/split/splitting the colony",
    ),
    "carpentry": dict(
        nouns="chisel plane workbench dovetail_joint mallet plank hinge drawer "
        "lathe cabinet beam/beams chair/chairs vice nail/nails shelf/shelves",
        adjectives="sanded seasoned polished crooked sturdy carved warped smooth oak knotty",
        people="carpenter joiner cabinetmaker apprentice timber_merchant woodturner",
        places="in the workshop|at the workbench|in the timber yard|by the lathe|"
        "under the rafters|in the sawmill|at the joiner's shop|beside the stack of planks",
        actions="plane/planed the plank|cut/cut/cutting a dovetail|sand/sanded the tabletop|"
        "glue/glued the joints|sharpen/sharpened the chisel|measure/measured the beam|"
        "hang/hung/hanging the door|turn/turned a bowl on the lathe|oil/oiled the hinges|"
        "carve/carved the headboard|fit/fitted/fitting the drawers",
    ),
    "fishing": dict(
        nouns="rod/rods reel/reels trout/trout salmon/salmon net/nets lure hook/hooks riverbank "
        "weir float tackle_box pike/pike creel fly/flies minnow/minnows",
        adjectives="slippery silvery patient shallow murky speckled rippling reedy quiet weedy",
        people="angler fisherman gillie bailiff boatman ferryman",
        places="on the riverbank|below the weir|in the deep pool|under the willow|"
        "at the mill race|by the reed beds|upstream from the bridge|on the still lake",
        actions="cast/cast/casting the line|tie/tied/tying a fly|bait/baited the hook|"
        "land/landed a trout|mend/mended the net|reel/reeled in the catch|"
        "wade/waded into the stream|untangle/untangled the line|"
        "clean/cleaned the fish|set/set/setting the keep net",
    ),
    "theatre": dict(
        nouns="stage curtain rehearsal script costume spotlight audience scene "
        "balcony dressing_room playbill understudy prop/props matinee encore footlight",
        adjectives="dramatic tragic comic opening-night backstage velvet rehearsed whispered grand",
        people="actor actress director stagehand playwright prompter usher",
        places="on the stage|in the wings|behind the curtain|in the dressing room|"
        "in the stalls|up in the gallery|at the stage door|under the proscenium arch",
        actions="learn/learnt the lines|rehearse/rehearsed the second act|raise/raised the curtain|"
        "mend/mended the costumes|rewrite/rewrote/rewriting the ending|"
        "take/took/taking a bow|dim/dimmed/dimming the lights|paint/painted the scenery|"
        "prompt/prompted the actors|sell/sold/selling the tickets",
    ),
    "archaeology": dict(
        nouns="trench shard/shards skeleton tomb/tombs coin/coins mosaic relic excavation "
        "burial_mound trowel sieve amphora brooch fossil/fossils ruin/ruins inscription",
        adjectives="ancient buried Roman weathered broken ceremonial prehistoric dusty "
        "carved forgotten",
        people="archaeologist excavator surveyor historian site_director volunteer",
        places="in the trench|at the dig site|beneath the chapel|on the burial mound|"
        "in the museum store|inside the tomb|at the edge of the fort|in the finds tent",
        actions="sieve/sieved the soil|brush/brushed the mosaic|label/labelled/labelling the finds|"
        "survey/surveyed the site|photograph/photographed the skeleton|"
        "date/dated the pottery|clean/cleaned the coins|"
        "translate/translated the inscription|dig/dug/digging the second trench|"
        "catalogue/catalogued the shards",
    ),
}

# Times, shared by every topic.
TIMES = (
    "that morning",
    "before dawn",
    "late in the evening",
    "after supper",
    "the next day",
    "in the spring",
    "for the first time",
    "once again",
    "at last",
    "all afternoon",
    "on Sunday",
    "before the winter",
    "at midday",
    "the following week",
    "without a word",
    "in a great hurry",
    "just before noon",
    "long after dark",
    "early on Monday",
)

# Evaluative predicates after "was", shared by every topic.
EVALS = (
    "heavier than anyone expected",
    "perfectly still",
    "far too small",
    "harder to find than before",
    "still there",
    "almost ready",
    "quite beautiful",
    "completely ruined",
    "in better shape than ever",
    "exactly where it should be",
    "not worth the trouble",
    "a little strange",
    "much older than it looked",
    "gone by the morning",
    "the best in the county",
    "nothing like the old one",
    "surprisingly good",
)

PERIODS = ("morning", "afternoon", "evening", "week", "summer", "winter", "day")

QUANTITIES = ("two", "three", "four", "a dozen", "several", "a few", "many", "twenty")

# Character names for reading-mode "books"; place-name parts for invented towns.
GIVEN_NAMES = (
    "Edith",
    "Tobias",
    "Margaret",
    "Silas",
    "Harriet",
    "Ambrose",
    "Clara",
    "Jasper",
    "Agnes",
    "Felix",
    "Ada",
    "Rupert",
    "Mabel",
    "Horace",
    "Eliza",
    "Oscar",
    "Beatrice",
    "Walter",
    "Ivy",
    "Cedric",
    "Winifred",
    "Barnaby",
    "Lydia",
    "Gideon",
    "Rosalind",
    "Percy",
    "Dorothy",
    "Magnus",
    "Lucy",
    "Arthur",
    "Nell",
    "Ezra",
    "Violet",
    "Hugo",
    "Flora",
    "Jonah",
    "Martha",
    "Ralph",
    "Iris",
    "Leopold",
    "Hester",
    "Basil",
    "Maud",
    "Caspar",
    "Sybil",
    "Otto",
    "Greta",
    "Victor",
)
SURNAMES = (
    "Hallam",
    "Pemberton",
    "Ashdown",
    "Morrow",
    "Thistlewood",
    "Gage",
    "Fairweather",
    "Crane",
    "Whitlock",
    "Blackwood",
    "Penrose",
    "Holloway",
    "Merriweather",
    "Stroud",
    "Larkin",
    "Oakley",
    "Rowntree",
    "Fenwick",
    "Carver",
    "Marsh",
    "Quill",
    "Hartley",
    "Tennant",
    "Bramble",
)
TITLES = ("Captain", "Doctor", "Mister", "Missus", "old", "young", "Aunt", "Uncle", "Professor")
TOWN_STARTS = (
    "Ash",
    "Bram",
    "Cold",
    "Elm",
    "Fen",
    "Glen",
    "Hart",
    "Kings",
    "Lark",
    "Mill",
    "North",
    "Oak",
    "Raven",
    "Stan",
    "Thorn",
    "Wey",
    "Wick",
    "Bright",
    "Long",
    "Stone",
)
TOWN_ENDS = (
    "bridge",
    "ford",
    "ham",
    "ley",
    "mouth",
    "field",
    "wick",
    "stead",
    "by",
    "combe",
    "holm",
    "ton",
    "well",
    "haven",
)

# ------------------------------------------------------------------------------------------------
# conversation: fillers, reactions and everyday topics shared by every speaker

FILLERS_START = (
    "well",
    "so",
    "yeah",
    "I mean",
    "you know",
    "honestly",
    "right",
    "okay so",
    "oh",
    "actually",
    "to be fair",
    "I guess",
    "mind you",
    "anyway",
)
HEDGES = ("kind of", "sort of", "really", "pretty", "quite", "so")
PARENTHETICALS = ("you know", "like", "I guess", "I mean", "I think", "honestly")

REACTIONS = (
    "Yeah, totally.",
    "Mm, I see what you mean.",
    "Right, right.",
    "Oh wow, that's amazing.",
    "No way!",
    "Exactly, that's what I was saying.",
    "Oh really? I didn't know that.",
    "Yeah, fair enough.",
    "Ha, that's so funny.",
    "Hmm, I'm not sure about that.",
    "Oh, that makes sense.",
    "Really? That's interesting.",
    "Yeah, I know what you mean.",
    "Sure, sure.",
    "Oh no, that sounds awful.",
    "Wait, seriously?",
)

EVERYDAY_PEOPLE = (
    "my sister",
    "my brother",
    "my mum",
    "my dad",
    "a friend of mine",
    "my neighbour",
    "my cousin",
    "my best friend",
    "my partner",
    "someone at work",
    "my auntie",
)
# a few people that come up more often at some ages (a weak, realistic text cue for age)
AGE_PEOPLE = {
    "<30": ("my flatmate", "my lecturer", "my mates from uni", "my housemates"),
    "30-60": ("my boss", "the kids", "my colleagues", "my husband", "my wife"),
    "60+": (
        "my grandchildren",
        "my old friends from the choir",
        "the grandkids",
        "my late husband",
    ),
}
EVERYDAY_TIMES = (
    "last weekend",
    "the other day",
    "yesterday",
    "last summer",
    "a couple of years ago",
    "when I was at school",
    "this morning",
    "on holiday",
    "last night",
    "over Christmas",
    "a while back",
    "in the autumn",
)
HABIT_TIMES = (
    "at the weekend",
    "in the evenings",
    "every day",
    "on holiday",
    "after work",
    "in the mornings",
    "now and then",
    "when it rains",
)
EVERYDAY_ACTIONS = (
    "go/went to the cinema",
    "watch/watched a film",
    "cook/cooked dinner",
    "go/went for a walk",
    "catch/caught the bus",
    "visit/visited family",
    "work/worked from home",
    "go/went shopping",
    "play/played football",
    "read/read a book",
    "take/took the dog out",
    "go/went to the gym",
    "clean/cleaned the flat",
    "meet/met up with friends",
    "order/ordered a takeaway",
    "stay/stayed in bed",
    "go/went to the park",
    "bake/baked a cake",
    "listen/listened to the radio",
    "call/called home",
    "queue/queued for ages",
    "take/took out the rubbish",
    "ride/rode a bike",
)
FEELINGS = (
    "tired",
    "happy",
    "nervous",
    "excited",
    "bored",
    "surprised",
    "annoyed",
    "relieved",
    "confused",
    "stressed",
    "proud",
)
OPINIONS = (
    "really interesting",
    "a bit strange",
    "quite fun",
    "pretty hard",
    "kind of boring",
    "so much better",
    "a lot of work",
    "really nice",
    "absolutely mad",
    "not too bad",
    "way more expensive than I thought",
    "super relaxing",
)
EVERYDAY_THINGS = (
    "the weather",
    "the traffic",
    "my job",
    "the price of everything",
    "the news",
    "the holiday season",
    "my neighbourhood",
    "my phone",
    "the train service",
    "the food",
)

# British words the generic conversation uses, and the American words that replace them for
# speakers with a North American accent.
AMERICAN_WORDS = {
    "mum": "mom",
    "holiday": "vacation",
    "flat": "apartment",
    "autumn": "fall",
    "film": "movie",
    "rubbish": "garbage",
    "queued": "waited in line",
    "queue": "wait in line",
    "queuing": "waiting in line",
    "cinema": "movies",
    "football": "soccer",
    "takeaway": "takeout",
    "mates": "buddies",
    "uni": "college",
    "auntie": "aunt",
    "at the weekend": "on the weekend",
    "Christmas": "the holidays",
    "flatmate": "roommate",
    "housemates": "roommates",
    "lecturer": "professor",
}

# The passage every conversation-mode speaker reads once (like EdAcc's opening passage),
# written for this project.
SCRIPTED_PASSAGE = (
    "Every Thursday my neighbour carries three heavy boxes of apples down to the market by the "
    "old bridge. She sells them quickly, then buys a thick loaf of bread, some sharp cheese and "
    "a bunch of yellow flowers for her brother, who lives alone beside the river."
)
