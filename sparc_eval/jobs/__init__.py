"""The jobs built on the library: the anonymizer card (:mod:`.card`), the content-leakage
comparison (:mod:`.leakage`) and SPARC's transcript-only evaluation (:mod:`.text`)."""
