"""``sparc-eval phones distinctiveness CORPUS``: which speakers' phone frequencies stand out."""

from __future__ import annotations

import warnings


def register(subparsers) -> None:
    phones = subparsers.add_parser(
        "phones", help="phone-frequency distinctiveness of a corpus's speakers"
    )
    actions = phones.add_subparsers(dest="action", metavar="ACTION", required=True)
    dist = actions.add_parser(
        "distinctiveness",
        help="relative phone frequencies per speaker, mean cosine "
        "distance to the others, correlation with per-speaker EER",
    )
    dist.add_argument("corpus", help="any path `sparc-eval corpus info` accepts")
    dist.add_argument("--eers", help="a results.json whose per_speaker EERs to correlate with")
    dist.add_argument(
        "--top", type=int, default=5, help="how many most and least distinctive speakers to print"
    )
    dist.add_argument("--out", help="write the full analysis as JSON here")
    dist.add_argument(
        "--cache-dir", help="phone cache (default: $SPARC_EVAL_CACHE or ~/.cache/sparc_eval)"
    )
    dist.set_defaults(func=run_distinctiveness)


def run_distinctiveness(args) -> int:
    from ..atomic import write_json
    from ..data.corpora import load_corpus
    from .distinct import analyse, per_speaker_eers
    from .features import PhoneFeatures

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*loading as text-only")
        manifest = load_corpus(args.corpus)
    eers = per_speaker_eers(args.eers) if args.eers else None
    features = PhoneFeatures(source="transcript", cache_dir=args.cache_dir)
    result = analyse(manifest, features, eers=eers)
    table, ranked = result["speakers"], result["ranked"]
    print(f"speakers: {len(ranked)}")
    print(
        "most distinctive:  "
        + ", ".join(f"{s} ({table[s]['distinctiveness']:.4f})" for s in ranked[: args.top])
    )
    print(
        "least distinctive: "
        + ", ".join(f"{s} ({table[s]['distinctiveness']:.4f})" for s in ranked[::-1][: args.top])
    )
    if "correlation_with_eer" in result:
        c = result["correlation_with_eer"]
        if c["pearson_r"] is None:
            print(
                f"correlation with per-speaker EER: not applicable ({c['n']} speakers with an EER)"
            )
        else:
            print(
                f"correlation with per-speaker EER over {c['n']} speakers: pearson r = {c['pearson_r']:.3f} "
                f"(p = {c['pearson_p']:.3g}), spearman rho = {c['spearman_rho']:.3f} (p = {c['spearman_p']:.3g})"
            )
    if args.out:
        write_json(args.out, result)
        print(args.out)
    return 0
