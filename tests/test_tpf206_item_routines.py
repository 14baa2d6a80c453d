"""TPF206 through a per-item inference routine that loops over the pieces of its own input
(new-rules-5/6's speech and video pipelines): ``model.tts_to_file(text, speaker, path)``
splits ``text`` into sentences, runs the model on each under ``torch.no_grad()`` and empties
the cache at its end, so a loop calling it once per speaker empties the cache on every
iteration of an evaluation loop. The routine's loop walks something computed from its
parameter (``self.split(text)``, ``range(n)``, whatever progress bar wraps it); ``tts``/
``synthesize`` are a speech model's inference methods, and a tensor type moved to the device
(``torch.LongTensor([speaker]).to("cuda")``) is no model the routine builds. Look-alikes that stay silent: a routine whose loop walks the data it is
handed (``check(model, loader)``: it evaluates a whole set per call) or holds
(``self.sentences``), and a routine that empties only under a condition."""

from __future__ import annotations

from test_tensors_project import _findings, _marked

VOICE = """
    import torch


    class Voice:
        def __init__(self, net):
            self.net = net.cuda()
            self.sentences = ["a", "b"]

        def split(self, text):
            return text.split(".")

        def tts_to_file(self, text, speaker, path, bar=None):
            pieces = []
            texts = self.split(text)
            parts = bar(texts) if bar else texts
            for part in parts:
                with torch.no_grad():
                    ids = torch.LongTensor([speaker]).to("cuda")
                    pieces.append(self.net.infer(part, ids))
            write(pieces, path)
            torch.cuda.empty_cache()

        def read_held(self, speaker):
            pieces = []
            for part in self.sentences:
                with torch.no_grad():
                    pieces.append(self.net.infer(part, speaker))
            torch.cuda.empty_cache()
            return pieces

        def tts_tidy(self, text, speaker, tidy):
            pieces = []
            for part in self.split(text):
                with torch.no_grad():
                    pieces.append(self.net.infer(part, speaker))
            if tidy:
                torch.cuda.empty_cache()
            return pieces


    @torch.no_grad()
    def check(model, loader):
        for x in loader:
            model(x)
        torch.cuda.empty_cache()
"""

SAY = """
    from voice import Voice, check

    model = Voice(build())
    for name, speaker in model.speakers.items():
        model.tts_to_file("hello there.", speaker, name + ".wav")  #!
    for speaker in model.speakers.values():
        model.read_held(speaker)
    for speaker in model.speakers.values():
        model.tts_tidy("hi.", speaker, False)
    for name, loader in loaders.items():
        check(model.net, loader)
"""


def test_a_routine_over_the_pieces_of_its_input_is_one_item(tmp_path):
    files = {"voice.py": VOICE, "say.py": SAY}
    assert len(_marked(files)) == 1
    assert _findings(tmp_path, files, "TPF206") == _marked(files)


RESTORER = """
    import torch


    class Restorer:
        def __init__(self, net_g, opts):
            self.net_g = net_g.cuda()
            self.opts = opts

        def feed(self, item):
            self.lq = item["lq"].cuda()

        def test(self):
            self.net_g.eval()
            with torch.no_grad():
                n = self.lq.size(0)
                outs, i = [], 0
                while i < n:
                    outs.append(self.net_g(self.lq[i:i + 4]))
                    i += 4
                self.output = torch.cat(outs)

        def test_stream(self, stream):
            with torch.no_grad():
                step = 0
                while step < self.opts.steps:
                    self.net_g(next(stream))
                    step += 1

        def validate(self, loader):
            for item in loader:
                self.feed(item)
                self.test()
                del self.lq
                torch.cuda.empty_cache()  #!

        def validate_streams(self, streams):
            for stream in streams:
                self.test_stream(stream)
                torch.cuda.empty_cache()
"""


def test_a_helper_counting_through_one_items_mini_batches_runs_it(tmp_path):
    """basicsr's ``test()``: ``while i < n:`` over mini-batches of the one image the loop fed
    in; a ``while`` loop that draws from an iterator (``next(stream)``) walks data."""
    files = {"restorer.py": RESTORER}
    assert len(_marked(files)) == 1
    assert _findings(tmp_path, files, "TPF206") == _marked(files)


SETS = """
    import torch


    @torch.no_grad()
    def score(model, enc):
        n = enc.numel() // 8
        for i in range(n):
            model(enc[i * 8:(i + 1) * 8].cuda())
        torch.cuda.empty_cache()


    @torch.no_grad()
    def chunked(model, rows):
        i = 0
        while i < len(rows):
            model(rows[i:i + 4].cuda())
            i += 4
        torch.cuda.empty_cache()


    def sweep(model, names):
        for name in names:
            score(model, encode(name))
        for name in names:
            chunked(model, encode(name))
"""


def test_a_routine_that_counts_through_a_set_it_is_handed_stays_silent(tmp_path):
    """A quantisation script's perplexity check (``for i in range(n)`` over the encoded set
    it is given) and a ``while`` over a parameter's rows evaluate a whole set per call: a
    loop over data sets calling them empties once per set."""
    assert _findings(tmp_path, {"sets.py": SETS}, "TPF206") == []
