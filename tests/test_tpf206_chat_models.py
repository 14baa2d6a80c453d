"""TPF206 in an evaluation loop that runs a chat model (issue 23, new-rules-7's misses): the
remote code of vision-language models answers through ``model.chat(tokenizer, ...)``, a
forward under another name, as ``model.generate(...)`` is. A loop over a benchmark's
batches that calls it under ``torch.inference_mode()`` and empties the cache on every
batch is an evaluation loop. Look-alikes stay silent: ``chat`` of something not named like
a model (a chat client), and the cache emptied every N batches."""

from __future__ import annotations

from test_tensors_project import _findings, _marked

FILES = {
    "evaluate_docs.py": """
        import torch

        def evaluate(model, tokenizer, loader, client):
            answers = []
            for i, (pixels, questions) in enumerate(loader):
                pixels = pixels.to(torch.bfloat16).cuda()
                with torch.inference_mode():
                    reply = model.chat(tokenizer=tokenizer, pixel_values=pixels, question=questions[0])
                    torch.cuda.empty_cache()  #!
                answers.append(reply)
            for i, (pixels, questions) in enumerate(loader):
                with torch.inference_mode():
                    answers.append(client.chat(questions[0]))
                    torch.cuda.empty_cache()
            for i, (pixels, questions) in enumerate(loader):
                with torch.inference_mode():
                    answers.append(model.chat(tokenizer=tokenizer, pixel_values=pixels.cuda(), question=questions[0]))
                if i % 100 == 0:
                    torch.cuda.empty_cache()
            return answers
    """,
}


def test_an_evaluation_loop_that_chats_with_a_model(tmp_path):
    assert _findings(tmp_path, FILES, "TPF206") == _marked(FILES)
