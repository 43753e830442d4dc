"""TextAttack's side of the ``textattack`` typo backend: :mod:`worker`, a script that runs in
TextAttack's own environment (``make textattack``: ``.venv-textattack``) as a child process.

This folder holds only that script, so running it by path puts nothing else on ``sys.path``.
"""
