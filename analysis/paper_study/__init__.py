"""The DLIO paper's characterization study on the emulator, beside the real applications' figures."""
