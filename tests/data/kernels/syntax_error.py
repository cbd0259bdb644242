"""Bad: does not parse."""

def kernel_function(x, weight)
    return x
