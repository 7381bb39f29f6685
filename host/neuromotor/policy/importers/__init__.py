"""Policies trained elsewhere, read into a PolicySpec: one module per file format (onnx_graph:
ONNX graphs such as Stable-Baselines3's and CleanRL's actors; rltools_h5: RLtools' HDF5
checkpoints, RAPTOR's among them). Each reads its file into a `network.Network`; `network.assemble`
completes it with what the file lacks (observation normalisation, action bounds) from the
caller's options and says where every part came from."""
