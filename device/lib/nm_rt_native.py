# nm_rt_native: the native backend of neuromotor_rt on kernels that have no Forward type
# (mlp and scratch_size only): a Python __call__ per inference. neuromotor_rt imports it
# only for such kernels; its own have Forward, whose policies it makes itself.
from array import array

from neuromotor_rt import Policy, _native_init, _native_module


class NativePolicy(Policy):
    name = "native"

    def __init__(self, sizes, acts, net, clamp=None, kernels=None):
        _native_init(self, sizes, acts, net, clamp, _native_module(kernels, "GRU" if max(acts) >= 3 else None))

    def __call__(self, obs, _array=array):
        # array('f') goes straight to the kernel (which checks its length);
        # anything else is copied into a preallocated buffer first. Kept this
        # small on purpose: a bytecode frame with more locals than
        # VM_MAX_STATE_ON_STACK would be heap-allocated (and freed) per call.
        if type(obs) is not _array:
            obs = self._copy_in(obs)
        if self.state is None:  # kernels without GRU take six arguments at most
            self.mlp(self.out, obs, self.net, self.layout, self.scratch, self.clamp)
        else:
            self.mlp(self.out, obs, self.net, self.layout, self.scratch, self.clamp, self.state)
        return self.out

    def reset(self):
        if self.state is not None:
            self.kernels.state_reset(self.state, self.net, self.layout)

    def _copy_in(self, obs):
        x = self.x
        for i in range(len(x)):
            x[i] = obs[i]
        return x
