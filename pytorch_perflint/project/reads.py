"""What ``ProjectIndex.recording`` collects besides module paths: the marks of answers
that read the project as a whole, by which a cached result is kept or dropped (``cache``)."""

# Noted by an answer that read the text of every project module (who calls a function):
# it depends on every file, not only on the import graph.
ALL_TEXTS = "<every project file's text>"
# Recorded when an answer depended on every project file (the import graph: who imports a
# module, who runs on an accelerator; the project's layout).
ALL_FILES = "<every project file>"
# Prefix of a recorded word: the answer read the text of every module that spells it
# (``ProjectIndex.text_naming``), and would change only when one more or one less does.
TEXTS_NAMING = "<texts naming>"
# Prefix of a recorded path whose text (not only its summary) an answer read.
TEXT_OF = "<text>"


def spells(index, path: str, word: str):
    """Whether the module at ``path`` spells ``word`` (True/False), None when its text
    cannot be read. Read through ``text_naming``: a module that does not spell the word is
    no dependency of the answer until it does (a comment edit there keeps it valid); only a
    module whose summary failed is read whole, to tell an unreadable one."""
    if index.text_naming(path, word) is not None:
        return True
    if index.summary(path).ok:
        return False
    return None if index.text(path) is None else False
