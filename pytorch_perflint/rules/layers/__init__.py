"""The layers rule family: its rules (``tpfNNN_*.py``) and the facts only they use."""
