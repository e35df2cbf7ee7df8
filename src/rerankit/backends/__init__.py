"""Where local models come from and run: the bundled all-MiniLM-L6-v2 (:mod:`.bundled`),
lazy loading shared per process with its lock and out-of-memory splitting (:mod:`.local`),
and ONNX export, quantisation and runtime (:mod:`.onnx`)."""
