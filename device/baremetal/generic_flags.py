"""PlatformIO pre-script: nm_generic.c is built as a generic library would be, with the
compiler's default floating-point contraction; the rest of the program keeps
-ffp-contract=off (the kernels' results then match the reference bit for bit)."""

Import("env")  # noqa: F821 (PlatformIO's SCons global)


def generic_as_a_library(env, node):
    return env.Object(node, CCFLAGS=[f for f in env["CCFLAGS"] if f != "-ffp-contract=off"])


env.AddBuildMiddleware(generic_as_a_library, "*nm_generic.c")  # noqa: F821
