"""Deterministic state checks: what actually happened on the desktop (files, documents, app records).

    verdict.py    what a check and a judge both answer about an episode: a Verdict with evidence
    result.py     CheckResult, one check's outcome (it gives its Verdict)
    base.py       what every check kind shares (name, label, path)
    files.py      checks over the home's files: by path, by mode, by what they hold wherever they are
    documents.py  checks that read one document, sheet, config, crontab or code file, and its copies
    pictures.py   checks that look at a saved picture: a region of the original still shown or not
    apps.py       checks over the web apps' records
    reading.py    reading the agent's files safely for a check
    kinds.py      the union of every kind: parse_check, evaluate_one, evaluate
    runner.py     CheckRunner: checks (and the ledger's reads) in a worker process, each with a time bound
"""
