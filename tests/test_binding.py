"""Binding rules for kernel_function, including KernelAgent's published signatures."""

from __future__ import annotations

import pytest
import torch

from workers.harness.binding import BindError, bind, model_values

VALUES = {"weight": "W", "stride": 2, "padding": 1, "dilation": 3, "kernel_size": 3, "eps": 1e-5}


def names_of(call):
    return call.inputs, call.kwargs


def test_inputs_fill_leading_positionals_whatever_their_names() -> None:
    def kernel_function(input, weight, bias=None, stride=1, padding=0):  # KernelAgent's depthwise conv
        pass

    call = bind(kernel_function, ["X"], VALUES)
    assert call.inputs == ["X"]
    assert call.kwargs == {"weight": "W", "stride": 2, "padding": 1}  # bias absent: keeps its default


def test_varargs_and_kwargs_receive_all_model_values() -> None:
    def kernel_function(x, *args, **kwargs):  # KernelAgent's RMSNorm and conv-transpose inputs
        pass

    call = bind(kernel_function, ["X"], VALUES)
    assert call.inputs == ["X"] and call.kwargs == VALUES


def test_named_value_overrides_a_default() -> None:
    def kernel_function(x, kernel_size=2, stride=2, padding=0, dilation=1):  # KernelAgent's max-pool
        pass

    assert bind(kernel_function, ["X"], VALUES).kwargs == {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 3}


def test_two_inputs_bind_positionally() -> None:
    def kernel_function(A, x):
        pass

    assert bind(kernel_function, ["A", "B"], {}).inputs == ["A", "B"]


def test_unbindable_parameter_is_a_clear_error() -> None:
    def kernel_function(x, weight, temperature):
        pass

    with pytest.raises(BindError, match="'temperature'.*model values available: dilation, eps"):
        bind(kernel_function, ["X"], VALUES)


def test_too_many_inputs_is_an_error() -> None:
    def kernel_function(x):
        pass

    with pytest.raises(BindError, match="fewer positional parameters than the problem's 2 inputs"):
        bind(kernel_function, ["X", "Y"], {})


def test_extra_inputs_go_to_varargs() -> None:
    def kernel_function(x, *rest):
        pass

    assert bind(kernel_function, ["X", "Y", "Z"], {}).inputs == ["X", "Y", "Z"]


def test_model_values_from_modules() -> None:
    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.eps = 1e-5
            self.conv = torch.nn.ConvTranspose3d(2, 4, 3, stride=2, padding=(1, 1, 1), dilation=2, bias=False)

    values = model_values(Model())
    assert values["eps"] == 1e-5
    assert values["stride"] == 2 and values["padding"] == 1 and values["dilation"] == 2
    assert values["kernel_size"] == 3 and values["groups"] == 1
    assert values["weight"].shape == (2, 4, 3, 3, 3)
    assert "bias" not in values  # bias=False leaves it None: absent


def test_non_uniform_tuple_stays_a_tuple() -> None:
    values = model_values(torch.nn.Conv2d(1, 1, (3, 5), stride=(1, 2)))
    assert values["kernel_size"] == (3, 5) and values["stride"] == (1, 2)


def test_every_parameter_and_buffer_is_a_model_value_by_its_qualified_name() -> None:
    """Two modules with a weight: the first's is ``weight``, each is also ``<module>_weight``; buffers too."""

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.depthwise = torch.nn.Conv2d(4, 4, 3, groups=4, bias=False)
            self.pointwise = torch.nn.Conv2d(4, 8, 1)
            self.bn = torch.nn.BatchNorm2d(8)

    model = Model()
    values = model_values(model)
    assert values["weight"] is model.depthwise.weight and values["depthwise_weight"] is model.depthwise.weight
    assert values["pointwise_weight"] is model.pointwise.weight and values["pointwise_bias"] is model.pointwise.bias
    assert values["bias"] is model.pointwise.bias  # the first module that has one
    assert values["bn_running_mean"] is model.bn.running_mean

    def kernel_function(x, weight, pointwise_weight, pointwise_bias):
        return x

    call = bind(kernel_function, [torch.zeros(1)], values)
    assert call.kwargs["pointwise_weight"] is model.pointwise.weight and call.kwargs["weight"] is model.depthwise.weight

