"""Files and folders the tool writes: created safely, locked, protected folders."""
