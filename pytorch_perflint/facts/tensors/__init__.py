"""Facts of the tensors rules' code, read on the linted file: device targets, host-built tensors and the text screens of the tensor rules."""
