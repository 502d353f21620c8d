"""The Lessons tab joins each step (its text in ``copy.STEPS``) to its live view by slug: every
step has a view and every view a step, whatever order either side is written in."""

from __future__ import annotations

import dataclasses

import gradio as gr
import pytest

from components.lessons import copy
from components.lessons.tab import VIEWS, joined_steps, step_models


def test_every_step_has_a_view_and_every_view_a_step():
    joined = joined_steps()
    assert [step.slug for step, _ in joined] == [s.slug for s in copy.STEPS]
    assert set(VIEWS) == {s.slug for s in copy.STEPS}
    assert [build for _, build in joined] == [VIEWS[s.slug] for s in copy.STEPS]


def test_the_join_does_not_depend_on_the_order_views_are_written_in():
    reordered = dict(reversed(list(VIEWS.items())))
    assert joined_steps(copy.STEPS, reordered) == joined_steps()


def test_a_step_without_a_view_is_an_error_naming_it():
    extra = dataclasses.replace(copy.STEPS[0], slug="a-new-step")
    with pytest.raises(ValueError, match=r"steps without a view \['a-new-step'\]"):
        joined_steps((*copy.STEPS, extra))


def test_a_view_without_a_step_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"views without a step \['encoder-vs-decoder'\]"):
        joined_steps(copy.STEPS[1:])


def test_two_steps_with_one_slug_are_an_error():
    with pytest.raises(ValueError, match="do not match"):
        joined_steps((*copy.STEPS, copy.STEPS[0]))


def test_each_view_builds_its_inputs_and_outputs_with_no_model():
    keys = step_models(())  # no model: every step but the zoo's waits, its inputs still built
    with gr.Blocks():
        for step, build in joined_steps():
            view = build(keys)
            assert view.inputs and view.outputs and view.main_text in view.inputs, step.slug
            assert (view.run is None) == (step.slug != "variants"), step.slug
