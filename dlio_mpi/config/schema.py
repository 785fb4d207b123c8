"""The configuration schema: every key a workload may set, its type, default and meaning.

Sections and keys follow the DLIO benchmark's and MLPerf Storage's workload YAMLs (model,
framework, workflow, dataset, reader, train, evaluation, checkpoint, output, metric, profiling),
so that their files load unchanged; section `io` holds this project's own keys (interface,
layout, MPI-IO hints, ...). A key marked emulated=False is accepted and reported as not
emulated (it only makes sense to a framework)."""
from dataclasses import dataclass
from typing import Any, Tuple

from dlio_mpi import backends


@dataclass(frozen=True)
class Key:
    type: str                  # int, size, float, time, bool, str, list, dict, or "enum"
    default: Any
    doc: str
    choices: Tuple[str, ...] = ()
    emulated: bool = True
    minimum: Any = None
    # a size that is a mean or a spread: a fractional number of bytes (MLPerf's 114660.07)
    # from a file is rounded to whole bytes, not refused
    rounded: bool = False


FORMATS = ("raw", "npy", "npz", "tfrecord", "hdf5", "csv", "jpeg", "png", "indexed_binary",
           "mmap_indexed_binary", "parquet")
INTERFACES = backends.NAMES
SHUFFLE = ("off", "seed", "random")
# how a checkpoint file is read back: in transfer_size pieces front to back, or as torch.load
# reads the zip torch.save makes (dlio_mpi.checkpoint.zip_reads), for the formats of a file per
# writer and part
CHECKPOINT_READ_PATTERNS = ("pieces", "torch_zip")
CHECKPOINT_WRITE_PATTERNS = ("pieces", "numpy", "stream")
CHECKPOINT_ZIP_FORMATS = ("file_per_rank", "model_optimizer")

SCHEMA = {
    "model": {
        "name": Key("str", "default", "the model's name (an identifier only)"),
        "type": Key("str", "default", "kind of model (an identifier only)", emulated=False),
        "model_size_bytes": Key("size", 0, "checkpoint size of the whole model (bytes), "
                                "split evenly among the checkpoint.writers ranks", minimum=0),
        "model_datatype": Key("enum", "fp16", "datatype of the parameters",
                              ("fp16", "bf16", "fp32", "int8", "uint8")),
        "optimizer_datatype": Key("enum", "fp32", "datatype of the optimizer state",
                                  ("fp16", "bf16", "fp32", "int8", "uint8")),
        "optimization_groups": Key("list", [], "tensor sizes grouped for the optimizer"),
        "num_layers": Key("int", -1, "transformer layers (checkpoint size)"),
        "layer_parameters": Key("list", [], "parameters per layer"),
        "parallelism": Key("dict", {"tensor": 1, "pipeline": 1, "data": -1, "zero_stage": 0},
                           "tensor, pipeline and data parallel degrees, ZeRO stage"),
        "transformer": Key("dict", {}, "hidden_size, ffn_hidden_size, vocab_size, "
                           "num_attention_heads, num_kv_heads"),
    },
    "framework": {
        "name": Key("str", "pytorch", "the framework the workload came from", emulated=False),
    },
    "workflow": {
        "generate_data": Key("bool", False, "generate the dataset before training"),
        "train": Key("bool", True, "run the training loop"),
        "evaluation": Key("bool", False, "run evaluation phases"),
        "checkpoint": Key("bool", False, "write checkpoints"),
        "profiling": Key("bool", False, "framework profiling", emulated=False),
        "debug": Key("bool", False, "framework debugging", emulated=False),
    },
    "dataset": {
        "data_folder": Key("str", "./data", "dataset directory (train/ and valid/ below it)"),
        "format": Key("enum", "raw", "on-disk format", FORMATS),
        "num_files_train": Key("int", 1, "training files", minimum=1),
        "num_files_eval": Key("int", 0, "evaluation files", minimum=0),
        "num_samples_per_file": Key("int", 1, "samples per file", minimum=1),
        "record_length": Key("size", 65536, "bytes per sample (mean)", minimum=1,
                             rounded=True),
        "record_length_stdev": Key("size", 0, "standard deviation of the sample size",
                                   minimum=0, rounded=True),
        "record_length_resize": Key("size", 0, "sample size after decoding", emulated=False),
        "num_subfolders_train": Key("int", 0, "subfolders of train/", minimum=0),
        "num_subfolders_eval": Key("int", 0, "subfolders of valid/", minimum=0),
        "file_prefix": Key("str", "img", "file name prefix"),
        # this project's own: the generated content's seed apart from the shuffles', so that
        # runs whose train.seed differs read one dataset (MLPerf Storage changes the seed
        # between runs, never the data)
        "seed": Key("int", -1, "seed of the generated content (-1: train.seed)", minimum=-1),
        "compression": Key("enum", "none", "compression (hdf5: gzip, lzf; npz: zip)",
                           ("none", "gzip", "lzf", "zip")),
        "compression_level": Key("int", 4, "gzip level", minimum=0),
        "enable_chunking": Key("bool", False, "HDF5: chunked dataset"),
        "content_fill": Key("float", 1.0, "share of each 4 KiB page of the generated samples "
                            "that is random bytes, the rest zeros (1.0: content that hardly "
                            "compresses; 0.25: gzip and zip store it in about a quarter)",
                            minimum=0.0),
        # this project's own dataset key
        "volume_shape": Key("list", [], "HDF5 volumes: the N-D shape of every volume in a "
                            "file (a sample is then a crop of each; empty: a dataset of rows)"),
        "crop_shape": Key("list", [], "HDF5 volumes: the N-D shape of a sample's crop, at a "
                          "seeded random position"),
        "crop_placement": Key("enum", "random", "HDF5 volumes: where a sample's crop lies: at "
                              "a seeded random position (random), or the sample-th of the "
                              "crops that tile the volume in row-major order (tiled: ranks "
                              "reading their parts of each sample, a domain decomposition, "
                              "with reader.sharding round_robin and reader.shuffle_block the "
                              "parts a sample)", ("random", "tiled")),
        "volumes": Key("list", [], "HDF5 volumes: one mapping per dataset, read in this order: "
                       "name, dtype (uint8), chunks (N-D), compression (none, gzip, lzf), fill "
                       "(share of a chunk's bytes that are random, 1.0: the rest zeros)"),
        "npz_layout": Key("enum", "per_sample", "NPZ files: a member per sample (x_0, x_1, "
                          "...), or stacked as the DLIO benchmark writes them (x: the file's "
                          "samples side by side, y: labels; each sample's load reads all of x; "
                          "needs reader.access=numpy), or shot: one FRNN shot per file as "
                          "plasma-python saves it (valid, is_disruptive, signals_dict: the "
                          "sample's bytes in a pickled dict, ttd), all four loaded per sample; "
                          "needs reader.access=numpy and one sample per file)",
                          ("per_sample", "stacked", "shot")),
        "parquet_row_group_size": Key("int", 0, "parquet: rows per row group, as the DLIO "
                                      "benchmark's parquet reader names it (0: pyarrow's "
                                      "default, 1048576)", minimum=0),
        "parquet_columns": Key("list", [], "parquet: the columns of a row, each a binary "
                               "value holding this share of the sample's bytes, in order "
                               "(a table of features, labels and other fields; empty: one "
                               "column, data)"),
        "hdf5_vlen": Key("bool", False, "HDF5: each sample a variable-length sequence of "
                         "bytes in a 1-D dataset (an encoded image, as h5py.vlen_dtype(uint8) "
                         "keeps it), its bytes in libhdf5's global heap: a read takes the "
                         "rows' descriptors, then each sequence from the heap; samples of "
                         "their own sizes (record_length_stdev)"),
        "hdf5_libver": Key("enum", "earliest", "HDF5 file format, as h5py's libver: earliest "
                           "(h5py's default) or latest (as the DLIO benchmark writes; fewer "
                           "metadata reads per open)", ("earliest", "latest")),
        "chunk_size": Key("size", 0, "HDF5: chunk size in bytes", minimum=0),
        "hdf5_fields": Key("list", [], "HDF5 rows: further fields of every sample, each a "
                           "dataset of its own with a row per sample (an image's label), read "
                           "after the sample's row in the same call's rows, in this order: "
                           "one mapping each of name, bytes (a row's), dtype (uint8), "
                           "chunk_rows (0: contiguous); dataset.record_length counts them"),
        "keep_files": Key("bool", True, "keep the dataset after the run"),
        "record_dims": Key("list", [], "dimensions of a record", emulated=False),
        "record_element_type": Key("str", "uint8", "element type of a record", emulated=False),
        "num_dataset_per_record": Key("int", 1, "HDF5 datasets per record", emulated=False),
        "chunk_dims": Key("list", [], "HDF5 chunk dimensions", emulated=False),
        "max_shape": Key("list", [], "HDF5 maximum shape", emulated=False),
        "hdf5": Key("dict", {}, "the DLIO benchmark's HDF5 options (chunk_dims, "
                    "num_dset_per_record, max_shape)", emulated=False),
        "generation_buffer_size": Key("size", 2 << 30, "memory a generator fills before it "
                                      "writes", emulated=False),
        "record_element_bytes": Key("int", 4, "bytes of a record's element", emulated=False),
    },
    "reader": {
        "data_loader": Key("str", "pytorch", "the framework's data loader; tensorflow with "
                           "TFRecord files and no reader.access given reads as the DLIO "
                           "benchmark's TensorFlow reader: reader.access=stream, "
                           "reader.interleave=read_threads, reader.eof_reads=1, shuffle_size "
                           "1024 when samples are shuffled (keys given keep their values)",
                           emulated=False),
        "batch_size": Key("int", 1, "samples per step per rank", minimum=1),
        "batch_size_eval": Key("int", 1, "samples per evaluation step per rank", minimum=1),
        "read_threads": Key("int", 1, "read-ahead threads per rank (C threads)", minimum=0),
        "pin_memory": Key("bool", True, "pinned host memory", emulated=False),
        "computation_threads": Key("int", 1, "preprocessing threads", emulated=False),
        "prefetch_size": Key("int", 2, "batches read ahead of the one in use", minimum=0),
        "sample_shuffle": Key("enum", "off", "sample order", SHUFFLE),
        "file_shuffle": Key("enum", "off", "file order", SHUFFLE),
        "transfer_size": Key("size", 262144, "largest single read in bytes (0: whole); the "
                             "block size of reader.access=stream; under mpiio_coll each "
                             "collective call's piece per rank", minimum=0),
        # this project's own reader keys
        "access": Key("enum", "sample", "how the input library reads: each sample's byte "
                      "range (sample), the rank's files front to back in transfer_size blocks "
                      "(stream: TFRecord, pandas), NPZ members or NPY files as numpy.load "
                      "reads them (numpy: an NPY file's header through a buffered file, its "
                      "array through C stdio), or a file whole as an image decoder reads it: its header, then "
                      "transfer_size requests through a buffered file (image: PIL), or a "
                      "Parquet file as pyarrow reads it: the footer, then the row groups' column "
                      "chunks (parquet: dataset.format=parquet's default), or each sample "
                      "by seek and read through a buffered file kept open (buffered: a "
                      "Dataset over binary shards; a sample shorter than the buffer fills it "
                      "from the sample's offset), or each sample's file read whole by "
                      "Python's f.read() (file: opened for it, the whole file asked for and "
                      "one byte more, then a read at its end that returns nothing; a file of "
                      "several samples read whole for each, as a zarr chunk for each of its "
                      "rows), or each "
                      "sample a file loaded whole by pickle.load through Python's buffered file "
                      "(pickle: opened for it, a buffer fill at its start, then the rest asked "
                      "for at once: read straight in whole buffers, the tail through a buffer "
                      "fill), or each sample a file loaded by torch.load (torch: opened for "
                      "it, the zip's reads torch.save's files take, as "
                      "checkpoint.read_pattern=torch_zip reads a checkpoint, of a file of "
                      "reader.torch_tensors tensors)",
                      ("sample", "stream", "numpy", "image", "parquet", "buffered", "file",
                       "pickle", "torch")),
        "sharding": Key("enum", "block", "how an epoch's order is split among ranks: "
                        "contiguous shares (block), or every ranks-th sample (round_robin: "
                        "IOR's segments), reader.sharding_block samples at a time",
                        ("block", "round_robin")),
        "shuffle_block": Key("int", 1, "with reader.sample_shuffle: the runs of this many "
                             "consecutive samples are shuffled, each run's samples read in "
                             "order (a loader that reads a batch as one slice ds[i:i + k] at "
                             "shuffled i); 1: the samples themselves", minimum=1),
        "shuffle_window": Key("int", 0, "with reader.sample_shuffle: the samples shuffled "
                              "within consecutive windows of this many, the windows in order, "
                              "each window's samples dealt to the ranks by one seeded draw and "
                              "a rank's share read in one seeded order, the same in every "
                              "window (IOR's -z on a shared file of several segments, -s: a "
                              "segment's transfers dealt to the tasks at random, a task's list "
                              "shuffled once and used in every segment); 0: the whole order",
                              minimum=0),
        "sharding_block": Key("int", 1, "reader.sharding=round_robin: the consecutive samples "
                              "of an epoch's order a rank takes in its turn (block-cyclic: "
                              "IOR's block over its transfer, -b over -t)", minimum=1),
        "parquet_open": Key("enum", "batch", "reader.access=parquet: each batch opens the "
                            "files it reads, their footers read again (batch: the DLIO "
                            "benchmark's parquet reader), or a file is opened when the batches "
                            "move on to it and kept while they read on in it (file: a loader "
                            "holding one pyarrow ParquetFile while it reads its row groups)",
                            ("batch", "file")),
        "parquet_columns_read": Key("list", [], "reader.access=parquet: the columns read, as "
                                    "positions in dataset.parquet_columns (a column "
                                    "projection; empty: all); a row group's chunks of them "
                                    "read as pyarrow pre-buffers them: chunks less than "
                                    "8 KiB apart in one read, up to 32 MiB"),
        "parquet_coalesce": Key("enum", "group", "reader.access=parquet: the chunks pyarrow "
                                "pre-buffers together: each row group's alone (group: "
                                "read_row_group, as the DLIO benchmark's parquet reader "
                                "reads), or those of all the row groups a batch reads of a "
                                "file at once (batch: read_row_groups, read_table, "
                                "pandas.read_parquet; neighbouring row groups' chunks may "
                                "share a read)", ("group", "batch")),
        "rank_shift": Key("int", 0, "rank r reads the share of rank (r + rank_shift) mod "
                          "ranks, the data another rank wrote with io.write_first (IOR's -C "
                          "read-back, which defeats the writer's page cache); 0: its own",
                          minimum=0),
        "reading_ranks": Key("int", 0, "the first K ranks alone read the data, sharing "
                             "each epoch's samples as a job of K ranks would; the other "
                             "ranks run the same steps without reading (a program whose rank "
                             "0 loads the data and broadcasts it, IOR's -N); 0: every rank",
                             minimum=0),
        "idle_ranks_open": Key("bool", False, "with reader.reading_ranks, the other ranks "
                               "open every data file once at start and close it, reading "
                               "none of it (a program whose every rank opens the data that "
                               "some read: h5bench's cross-stencil read)"),
        "hdf5_reads": Key("enum", "batch", "HDF5 read by samples: a batch's rows of a file in "
                          "one H5Dread, a union of hyperslabs (batch), or one H5Dread per "
                          "sample (sample: h5py indexing a row per item, as a Dataset's "
                          "__getitem__ does; collective: every rank makes a batch's worth "
                          "of calls); with io.read_type=memory, the load's rows of a file in "
                          "one H5Dread or one each", ("batch", "sample")),
        "hdf5_dataset_open": Key("enum", "file", "when an HDF5 reader opens the dataset: "
                                 "with its file, kept open (file), or anew for each H5Dread "
                                 "(read: h5py's f[\"x\"][i] in a Dataset's __getitem__, the "
                                 "DLIO benchmark's HDF5 reader), libhdf5's chunk cache then "
                                 "empty at each read, so a chunk holding several samples is "
                                 "read again for each; independent reads only",
                                 ("file", "read")),
        "hdf5_chunk_cache": Key("enum", "default", "the chunk cache of an HDF5 reader's "
                                "datasets: libhdf5's default (1 MiB: a chunk read whole on a "
                                "miss, its other rows served from it), or off (h5py's "
                                "File(rdcc_nbytes=0): a selection inside a chunk read from the "
                                "file alone, an uncompressed chunk never read whole for it)",
                                ("default", "off")),
        "batch_order": Key("list", [], "with reader.hdf5_reads=sample: the order of a "
                           "batch's H5Dread calls, as positions in the batch (a permutation "
                           "of 0 .. batch_size-1; empty: in order): a reader that takes a "
                           "step's datasets or fields in an order of its own, not the file's "
                           "(h5bench reads x y z id_1 id_2 px py pz, written x y z px py pz "
                           "id_1 id_2: [0, 1, 2, 6, 7, 3, 4, 5])"),
        "worker_files": Key("enum", "shared", "with read threads: the rank's open files shared "
                            "by its threads (shared), or each thread's own, batch k read "
                            "through thread k mod read_threads's, each file opened when the "
                            "thread first reads it and closed at the epoch's end (epoch: a "
                            "data loader's worker processes, new every epoch) or kept for the "
                            "run (run: persistent workers)", ("shared", "epoch", "run")),
        "shuffle_scope": Key("enum", "global", "what reader.sample_shuffle permutes: all "
                             "samples each epoch before they are split among ranks (global), "
                             "or each rank's own share, the same every epoch, split as if in "
                             "order (rank: IOR's -z, a loader shuffling its own shard)",
                             ("global", "rank")),
        "torch_tensors": Key("int", 1, "reader.access=torch: the tensors a sample's file "
                             "holds, each read in one call", minimum=1),
        "pickle_tail": Key("size", 0, "reader.access=pickle: the bytes of a pickle's last "
                           "frame after a large object written outside its frames (the object "
                           "read straight in, then this tail through a buffer fill); 0: the "
                           "pickle is one frame", minimum=0),
        "pickle_frame": Key("size", 0, "reader.access=pickle: a pickle of many objects in "
                            "frames of this many bytes (protocol 4 frames of 64 KiB), each "
                            "asked for in turn through the buffered file: a buffer fill, the "
                            "rest straight in; 0: the pickle is one frame", minimum=0),
        "reopen": Key("bool", False, "open a sample's file for its read and close it after "
                      "(loaders that open a file per sample); reader.access=numpy always does"),
        "buffer_size": Key("size", 0, "reader.access=numpy, image, buffered and pickle: the "
                           "buffered "
                           "file's size "
                           "(0: the file system's st_blksize, as Python's open uses)",
                           minimum=0),
        "eof_reads": Key("int", 0, "reader.access=stream: reads at each file's end after its "
                         "last block, which return nothing (a reader that reads to the end "
                         "asks again: pandas' CSV reader makes 2)", minimum=0),
        "whole_file": Key("bool", False, "reader.access=sample: a sample's file read whole "
                          "in one call from its start, its header or framing too, for each "
                          "of its samples, as a reader that loads the file and parses it in "
                          "memory does (the DLIO benchmark's O_DIRECT NPY and NPZ readers)"),
        "epoch_overrun": Key("int", 0, "steps of the next epoch's batches read after each "
                             "epoch's last step and dropped, the next epoch reading them "
                             "again: an input pipeline that prefetches over a repeated "
                             "dataset reads on before its iterator is dropped (tf.data: a "
                             "few files of the next pass)", minimum=0),
        "interleave": Key("int", 1, "reader.access=stream: files a rank reads at once, one "
                          "sample from each in turn, a file that ends giving its place to the "
                          "next (tf.data's interleave: TFRecordDataset's num_parallel_reads, "
                          "which the DLIO benchmark sets to reader.read_threads)", minimum=1),
        "stream_pass": Key("enum", "epoch", "reader.access=stream: a file's pass front to back "
                           "once an epoch, its samples taken from it in turn (epoch: TFRecord), "
                           "or a pass over the whole file, opened anew, for each of its samples "
                           "(sample: the DLIO benchmark's CSV reader, whose pandas.read_csv "
                           "loads the file for every sample it takes; one file at a time)",
                           ("epoch", "sample")),
        "shuffle_size": Key("int", 0, "reader.access=stream with sample_shuffle: samples in "
                            "the shuffle buffer (reads run this far ahead)", minimum=0),
        "preprocess_time": Key("time", 0.0, "emulated preprocessing per sample (s)"),
        "preprocess_time_stdev": Key("float", 0.0, "its standard deviation", minimum=0.0),
        "odirect": Key("bool", False, "read with O_DIRECT (same as io.interface=posix_direct)"),
        "transformed_sample": Key("list", [], "shape after transformation", emulated=False),
        "transformed_sample_type": Key("str", "uint8", "type after transformation",
                                       emulated=False),
        # the DLIO benchmark's reader keys that choose among its Python classes and
        # processes; the reads they lead to are set by this project's own keys
        "dont_use_mmap": Key("bool", False, "the DLIO benchmark's HDF5 and NPY readers: no "
                             "memory map (io.interface chooses the read calls here)",
                             emulated=False),
        "reader_classname": Key("str", "", "a custom reader class", emulated=False),
        "data_loader_classname": Key("str", "", "a custom data loader class", emulated=False),
        "data_loader_sampler": Key("str", "", "iterative or index sampling of a custom data "
                                   "loader", emulated=False),
        "multiprocessing_context": Key("str", "fork", "how data-loader worker processes "
                                       "start (reads here come from threads of the rank)",
                                       emulated=False),
    },
    "train": {
        "epochs": Key("int", 1, "epochs", minimum=1),
        "computation_time": Key("time", 0.0, "emulated compute per step (s), or a distribution"),
        "computation_time_stdev": Key("float", 0.0, "its standard deviation", minimum=0.0),
        "total_training_steps": Key("int", -1, "at most this many steps in each epoch (the "
                                     "DLIO benchmark's count, which starts again with every "
                                     "epoch; -1: whole epochs)"),
        "seed_change_epoch": Key("bool", True, "shuffle differently every epoch"),
        "seed": Key("int", 123, "random seed"),
    },
    "evaluation": {
        "eval_time": Key("time", 0.0, "emulated compute per evaluation step (s)"),
        "eval_time_stdev": Key("float", 0.0, "its standard deviation", minimum=0.0),
        "epochs_between_evals": Key("int", 1, "evaluate every N epochs", minimum=1),
        "eval_after_epoch": Key("int", 1, "first epoch followed by an evaluation (counted "
                                "from 1); then every epochs_between_evals epochs", minimum=1),
    },
    "checkpoint": {
        "checkpoint_folder": Key("str", "./checkpoints", "checkpoint directory"),
        "checkpoint_after_epoch": Key("int", 1, "first epoch that checkpoints", minimum=0),
        "epochs_between_checkpoints": Key("int", 1, "checkpoint every N epochs", minimum=1),
        "steps_between_checkpoints": Key("int", -1, "checkpoint after every N steps, counted "
                                          "as checkpoint.step_count says (-1: off)"),
        "step_count": Key("enum", "epoch", "how steps_between_checkpoints counts steps: "
                          "epoch (from 1 in every epoch, as the DLIO benchmark does) or run "
                          "(over the whole run, as a training framework's global step)",
                          choices=("epoch", "run")),
        "fsync": Key("bool", False, "fsync every checkpoint file"),
        "time_between_checkpoints": Key("float", -1.0, "checkpoint-only mode: seconds apart"),
        "num_checkpoints_write": Key("int", -1, "checkpoint-only mode: checkpoints written "
                                      "(0: none, read those in checkpoint_folder)"),
        "num_checkpoints_read": Key("int", -1, "checkpoint-only mode: checkpoints read"),
        "recovery_rank_shift": Key("bool", False, "read another rank's shard"),
        "rank_sync": Key("bool", False, "barrier after a checkpoint write or read"),
        "mode": Key("enum", "default", "all of the checkpoint or a subset", ("default", "subset")),
        "randomize_tensor": Key("bool", True, "random content (else ones)", emulated=False),
        "model_size": Key("size", 0, "older name of model.model_size_bytes", minimum=0),
        "ksm": Key("dict", {}, "kernel samepage merging", emulated=False),
        "type": Key("enum", "rank_zero", "the DLIO benchmark's checkpoint location (who "
                    "writes: checkpoint.writers here)", ("rank_zero", "all_ranks"),
                    emulated=False),
        "checkpoint_mechanism_classname": Key("str", "", "a custom checkpoint class",
                                              emulated=False),
        # this project's own checkpoint keys
        "format": Key("enum", "file_per_rank", "how a checkpoint is stored: a file per "
                      "writing rank, one shared file by collective MPI-IO, one shared HDF5 "
                      "file, the DLIO paper's four files per rank, or a writing rank's "
                      "weights and its optimizer state in two files (model_optimizer)",
                      ("file_per_rank", "mpiio", "hdf5", "four_files", "model_optimizer")),
        "writers": Key("enum", "rank0", "who writes a model_size_bytes checkpoint (each "
                       "writer its share of the model's bytes): rank 0, every rank, the "
                       "ranks of the first model-parallel replica, or every "
                       "checkpoint.writer_stride-th rank from 0 (strided)",
                       ("rank0", "all", "model_parallel", "strided")),
        "writer_stride": Key("int", 1, "checkpoint.writers=strided: ranks 0, stride, "
                             "2 x stride, ... write (one rank a node of that many ranks, the "
                             "first of each group)", minimum=1),
        "writer_first": Key("int", 0, "checkpoint.writers=strided: the first writing rank "
                            "(with a stride of the job's size, the one writer)", minimum=0),
        "optimizer_writers": Key("enum", "same", "who writes the optimizer state of a "
                                 "model_size_bytes checkpoint (its optimizer_multiplier "
                                 "share), each writer its share: same (checkpoint.writers, "
                                 "with the model), or every rank (all: ZeRO stage 1's "
                                 "sharded optimizer state) while the model is "
                                 "checkpoint.writers'", ("same", "rank0", "all",
                                                         "model_parallel")),
        "preset": Key("enum", "none", "a named checkpoint size (MLPerf Storage llama3 layouts)",
                      ("none", "llama3_8b", "llama3_70b", "llama3_405b", "llama3_1t")),
        "odirect": Key("bool", False, "write and read file_per_rank checkpoints with O_DIRECT"),
        "transfer_size": Key("size", 1 << 20, "bytes per write/read call", minimum=1),
        "collective_transfer_size": Key("size", 64 << 20, "mpiio and hdf5 formats: bytes a "
                                        "rank moves per collective call", minimum=1),
        "files_per_rank": Key("int", 1, "file_per_rank: a writer's share in this many files "
                              "of equal parts (a framework's several files a rank: layers, "
                              "model and optimizer states), 1 to 8", minimum=1),
        "collective": Key("bool", True, "mpiio and hdf5 formats: collective calls "
                          "(MPI_File_write_at_all, H5Dwrite with MPI-IO collective transfers), "
                          "or independent ones (MPI_File_write_at, H5Dwrite independent), "
                          "collective_transfer_size bytes each"),
        "verify": Key("bool", False, "verify content when reading checkpoints back"),
        "write_pattern": Key("enum", "pieces", "how a checkpoint file is written: in "
                             "checkpoint.transfer_size calls through POSIX (pieces), or as "
                             "numpy.save writes it (numpy: a 128-byte header through POSIX, "
                             "the rest through a C stream in checkpoint.transfer_size calls), "
                             "or all through a C stream (stream: TensorFlow's checkpoint "
                             "writer, fwrite); numpy and stream with checkpoint.format "
                             "file_per_rank", CHECKPOINT_WRITE_PATTERNS),
        "read_pattern": Key("enum", "pieces", "how a checkpoint file is read back: front to "
                            "back in transfer_size pieces, or in torch.load's calls on the zip "
                            "torch.save makes (torch_zip: 4 KiB headers, the end records and "
                            "the central directory from the end, then each tensor in one call; "
                            "file_per_rank and model_optimizer)", CHECKPOINT_READ_PATTERNS),
        "tensors_per_file": Key("list", [], "read_pattern=torch_zip: the tensors in each file "
                                "of a rank's checkpoint, in the format's order (model_optimizer: "
                                "the model file's, the optimizer file's), equal shares of its "
                                "bytes; the last count for the files beyond (none: 1)"),
        "optimizer_multiplier": Key("float", 0.0, "model_size_bytes checkpoints: optimizer "
                                    "state as a multiple of the model's bytes", minimum=0.0),
    },
    "output": {
        "folder": Key("str", "./dlio_output", "results directory"),
        "log_file": Key("str", "dlio.log", "log file name", emulated=False),
        "metric": Key("dict", {"exclude_start_steps": 1, "exclude_end_steps": 0},
                      "steps excluded from AU"),
    },
    "metric": {
        "au": Key("float", 0.9, "AU threshold for pass/fail", minimum=0.0),
    },
    "profiling": {
        "profiler": Key("str", "none", "framework profiler", emulated=False),
        "iostat_devices": Key("list", [], "devices for iostat", emulated=False),
    },
    "storage": {
        "storage_type": Key("enum", "local_fs", "where the data lives: a file system (local_fs, "
                            "parallel_fs); object stores (s3, aistore) are not emulated",
                            ("local_fs", "parallel_fs", "s3", "aistore")),
        "storage_root": Key("str", "./", "the root of the storage's namespace", emulated=False),
        "storage_options": Key("dict", {}, "object store options (endpoint, credentials)",
                               emulated=False),
    },
    "io": {
        "interface": Key("enum", "posix", "how samples are read", INTERFACES),
        "layout": Key("enum", "multi", "files per rank's share (multi), one shared file read in "
                      "parts (shared), or one file every rank reads whole (replicated)",
                      ("multi", "shared", "replicated")),
        "read_type": Key("enum", "on_demand", "read per step, or the whole input at start",
                         ("on_demand", "memory")),
        "mpiio_hints": Key("dict", {}, "MPI_Info hints for MPI-IO and HDF5 opens"),
        "stdio_buffer": Key("size", 0, "STDIO stream buffer (0: the C library's)", minimum=0),
        "queue_depth": Key("int", 32, "io.interface=io_uring: transfers of a file's reads and "
                           "writes in flight at once", minimum=1),
        "fadvise": Key("enum", "none", "posix_fadvise hint at open",
                       ("none", "normal", "sequential", "random", "willneed")),
        "remainder": Key("enum", "drop", "samples left over after equal steps: dropped, or "
                         "padded with repeats", ("drop", "pad")),
        "allreduce_bytes": Key("size", 0, "gradient exchange: 0 a barrier, else an "
                               "MPI_Allreduce of this many bytes", minimum=0),
        "exchange_wait": Key("enum", "sleep", "how a rank waits for the gradient exchange: "
                             "sleep (a futex barrier of the node's ranks, early ones asleep; "
                             "across nodes and for an allreduce the nonblocking MPI call "
                             "tested every 50 us with sleeps between) or mpi (the blocking call, which spins in most MPI "
                             "libraries and takes the cores read threads need)",
                             ("sleep", "mpi")),
        "rank_slice_us": Key("int", 100, "time slice (us) the rank's thread asks of Linux's "
                             "fair scheduler (EEVDF, 6.12 and later): woken at a step's end or "
                             "in the exchange, it takes a core from read threads (which keep "
                             "the default slice) at once; 0: the kernel's default", minimum=0),
        "rank_priority": Key("int", 1, "SCHED_FIFO priority (1-99) of the rank's thread in "
                             "the training steps of an epoch whose files are all open, where "
                             "it only waits (for a batch, through the compute, at the node "
                             "barrier): woken, it takes a core from "
                             "read threads at once, as an accelerator ends its step whatever "
                             "the host's cores do; needs CAP_SYS_NICE or RLIMIT_RTPRIO "
                             "(refused: the run notes it and goes on); 0: the thread's own "
                             "policy", minimum=0),
        "keep_oplog": Key("bool", False, "keep every rank's op log in the output"),
        "oplog_capacity": Key("int", 1 << 20, "op-log entries per rank", minimum=1),
        "memory_limit_fraction": Key("float", 0.9, "share of a host's available memory "
                                     "(MemAvailable, or its cgroup's room where less) the "
                                     "ranks on it may take with the buffers a run allocates "
                                     "(checked before any I/O; 0: not checked)", minimum=0.0),
        "fail_below_au": Key("bool", False, "exit status 3 when AU is under metric.au"),
        "write_first": Key("bool", False, "before the first epoch, write the (raw or HDF5) "
                           "files the run reads through io.interface in "
                           "reader.transfer_size pieces (HDF5: H5Dwrite calls of whole rows), "
                           "as a write-then-read benchmark (IOR) does"),
        "write_fsync": Key("bool", False, "io.write_first: fsync each file after its writes"),
        "write_collective": Key("bool", False, "io.write_first on one shared file: collective "
                                "writes (MPI_File_write_at_all, libhdf5's collective "
                                "transfer) where io.interface reads independently, as a "
                                "program that writes its dataset collectively and reads it "
                                "back independently (h5py's fast read path drops "
                                "dset.collective)"),
        "write_fsync_per_write": Key("bool", False, "io.write_first: fsync after every write "
                                     "call (each reader.transfer_size piece; MPI_File_sync "
                                     "through MPI-IO), as IOR's -Y does; raw files only"),
        "write_each_epoch": Key("bool", False, "io.write_first: the files written again "
                                "before every later epoch, as IOR's repetitions (-i N) write "
                                "then read each time"),
        "write_order": Key("enum", "sequential", "io.write_first: the order of a rank's "
                           "transfer-size pieces of a file: sequential (ascending offsets, as "
                           "IOR writes by default), shuffled (a seeded permutation, as IOR's "
                           "-z random offsets), or read (in the order the rank reads them in "
                           "the first epoch: IOR's -z, whose writes and reads follow one list "
                           "of offsets); raw files only",
                           choices=("sequential", "shuffled", "read")),
        "check_dataset": Key("bool", False, "before training, check every file of the dataset "
                             "in parallel: its format, sample count and sizes (TFRecord CRCs "
                             "too)"),
    },
}

# Older spellings that workload files in the wild use: (section, key) -> (section, key)
ALIASES = {
    ("dataset", "record_length_bytes"): ("dataset", "record_length"),
    ("dataset", "record_length_bytes_stdev"): ("dataset", "record_length_stdev"),
    ("dataset", "record_length_bytes_resize"): ("dataset", "record_length_resize"),
    ("model", "model_size"): ("model", "model_size_bytes"),
    # the DLIO benchmark's names of keys this project keeps in other sections
    ("reader", "read_type"): ("io", "read_type"),
    ("reader", "file_access"): ("io", "layout"),
    ("reader", "transformed_record_dims"): ("reader", "transformed_sample"),
    ("reader", "transformed_record_element_type"): ("reader", "transformed_sample_type"),
}
# the DLIO benchmark's older section names
SECTION_ALIASES = {"data_reader": "reader"}
FORMAT_ALIASES = {"dlio_npz": "npz", "dlio_tfrecord": "tfrecord", "dlio_hdf5": "hdf5",
                  "bin": "raw", "h5": "hdf5"}
