"""Judges: turn a prediction and its gold answers into a score in [0, 1].

:mod:`rr.judges.base` holds the :class:`~rr.judges.base.Judge` protocol and its input record
:class:`~rr.judges.base.JudgeItem`; :mod:`rr.answers` the SQuAD-style string metrics;
:mod:`rr.judges.match` the string-match judge (config option ``judge=match``);
:mod:`rr.judges.llm` Cao et al.'s LLM judge (``judge=llm``) and RARE's two-stage judge
(``judge=two_stage``), whose verdicts :mod:`rr.judges.verdicts` parses;
:mod:`rr.judges.refusal` rr's refusal-aware match (``judge=refusal_match``) and :mod:`rr.judges.rgb`
RGB's own scorer (``judge=rgb``).
"""
