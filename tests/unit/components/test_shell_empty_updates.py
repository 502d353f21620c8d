"""Empty updates (``gr.skip()``) answered at once (components/shell/blocks.py:
``EncoderLabBlocks.postprocess_data``): the same answers and the same page state afterwards as
Gradio's own path, which builds each skipped output's component and config again."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import gradio as gr
from gradio.state_holder import SessionState

from components.shell.blocks import EncoderLabBlocks


def _in_own_loop(coroutine):
    with ThreadPoolExecutor(1) as pool:  # a loop of its own (the browser tests hold the main one)
        return pool.submit(asyncio.run, coroutine).result()


def _demo():
    with EncoderLabBlocks() as demo:
        text = gr.Textbox(label="Text")
        outputs = [gr.HighlightedText(), gr.Dataframe(label="Top k"), gr.Plot(), gr.HTML("<p>start</p>"),
                   gr.Textbox(label="Filled", max_lines=3), gr.Markdown(), gr.State([])]
        text.submit(lambda t: None, [text], outputs, api_name="answer")
    return demo


def _answers(demo, predictions, gradios: bool):
    block_fn = demo.fns[0]
    state = SessionState(demo)
    method = gr.Blocks.postprocess_data if gradios else EncoderLabBlocks.postprocess_data
    answered = _in_own_loop(method(demo, block_fn, predictions, state))
    later = _in_own_loop(method(demo, block_fn, [gr.update(visible=False), *[gr.skip()] * 6], state))
    configs = {block._id: state.blocks_config.config_for_block(block._id, [], state[block._id])
               for block in block_fn.outputs if not block.stateful}
    return answered, later, configs


def _without_values(configs: dict) -> dict:
    return {k: {**c, "props": {p: v for p, v in c["props"].items() if p != "value"}} for k, c in configs.items()}


def test_skips_answer_as_gradio_does():
    demo = _demo()
    cases = [  # made afresh for each path: Gradio pops an update's value out of the dict it is given
        lambda: [[("a", None)], gr.skip(), gr.skip(), gr.skip(), gr.skip(), "Add [MASK] to the text.", gr.skip()],
        lambda: [gr.skip()] * 7,
        lambda: gr.skip(),  # one skip for every output
        lambda: [gr.skip(), {"headers": ["a"], "data": [[1]]}, gr.skip(), gr.update(value="<b>x</b>"),
                 gr.update(value="filled", visible=True), gr.skip(), ["kept"]],
    ]
    for case in cases:
        predictions = case()
        ours = _answers(demo, predictions, gradios=False)
        gradios = _answers(demo, case(), gradios=True)
        assert ours[:2] == gradios[:2], predictions  # the answers, then a later update's
        assert _without_values(ours[2]) == _without_values(gradios[2]), predictions  # the session's configs
    # The one difference: Gradio's rebuilt component drops the stored value of a skipped output
    # (the HTML's "<p>start</p>" becomes None in the session's config, while the page still
    # shows it); answered in place, the config keeps what the page shows.
    html = demo.fns[0].outputs[3]._id
    assert _answers(demo, cases[1](), gradios=False)[2][html]["props"]["value"] == "<p>start</p>"
    answered = _answers(demo, cases[1](), gradios=False)[0]
    assert answered[3] == {"props": {"__type__": "update"}, "__type__": "update"}  # HTML's own shape
    assert answered[0] == {"__type__": "update"}


def test_skips_no_longer_rebuild_components(monkeypatch):
    demo = _demo()
    built = []
    original = gr.Dataframe.__init__

    def counting(self, *args, **kwargs):
        built.append(kwargs.get("label"))
        original(self, *args, **kwargs)

    monkeypatch.setattr(gr.Dataframe, "__init__", counting)
    _answers(demo, [gr.skip()] * 7, gradios=True)
    assert built  # Gradio's path builds the skipped table again
    built.clear()
    _answers(demo, [gr.skip()] * 7, gradios=False)
    assert built == []
