"""Reading the YAML of a configuration (a workload file, a command-line value) with bounds on
what a small text may build: anchors and aliases let a few lines stand for an exponential
number of values (a "billion laughs" document), which PyYAML builds as shared objects that
only blow up later, when the configuration is copied or written out. The composer counts
every value as it would be once each alias is expanded, and refuses a document beyond
MAX_VALUES, an alias to the collection that holds it, or nesting deeper than MAX_DEPTH,
before anything is built from it."""
import yaml

from dlio_mpi.config.errors import ConfigError

# values of a document with its aliases expanded: a workload file holds a few hundred
MAX_VALUES = 1_000_000
# collections inside collections: a workload file nests four deep
MAX_DEPTH = 64


class BoundExceeded(yaml.YAMLError):
    """A document over a bound; problem and problem_mark as PyYAML's errors carry them."""

    def __init__(self, problem, mark):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class _BoundedLoader(yaml.SafeLoader):
    """yaml.SafeLoader whose composer counts the values of the document with every alias
    expanded (an alias counts the whole of the node it names) and its nesting depth."""

    def __init__(self, text):
        super().__init__(text)
        self._expanded = 0          # values so far, each alias expanded
        self._sizes = {}            # id(node) -> values of the node, its aliases expanded
        self._depth = 0

    def _count(self, n, mark, what):
        self._expanded += n
        if self._expanded > MAX_VALUES:
            raise BoundExceeded(f"{what} takes the document beyond {MAX_VALUES} values once its "
                           "aliases are expanded (nested anchors and aliases)", mark)

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = self.anchors.get(event.anchor)
            if node is not None:        # else PyYAML reports the undefined alias
                size = self._sizes.get(id(node))
                if size is None:        # anchored on a collection still being composed
                    raise BoundExceeded(f"alias *{event.anchor} is inside the collection it names",
                                   event.start_mark)
                self._count(size, event.start_mark, f"alias *{event.anchor}")
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise BoundExceeded(f"collections nested deeper than {MAX_DEPTH} levels",
                           self.peek_event().start_mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, yaml.ScalarNode):
            size = 1
        elif isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self._sizes[id(item)] for item in node.value)
        else:
            size = 1 + sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        self._sizes[id(node)] = size
        self._count(1, node.start_mark, "a value")
        return node


def load_text(text):
    """The document of YAML text, as yaml.safe_load reads it, within the bounds; raises
    yaml.YAMLError (problem and problem_mark set where known) or ValueError (a value PyYAML
    cannot build, as an integer of more digits than Python converts)."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _line_of(error, text):
    mark = getattr(error, "problem_mark", None)
    if mark is not None:
        return f" line {mark.line + 1}"
    if isinstance(getattr(error, "position", None), int):
        return f" line {text[:error.position].count(chr(10)) + 1}"
    return ""


def read_yaml(path):
    """The document of a YAML file; a file that is unreadable, not UTF-8 text, not YAML or
    over the bounds is a ConfigError naming the file and, where known, the line."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ConfigError(f"{path} line {line}: not UTF-8 text (byte 0x{data[e.start]:02x}); "
                          f"a workload file is YAML") from None
    try:
        return load_text(text)
    except BoundExceeded as e:
        raise ConfigError(f"{path}{_line_of(e, text)}: refused: {e.problem}") from None
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or getattr(e, "reason", None)
        why = f" ({' '.join(str(problem).split())})" if problem else ""
        raise ConfigError(f"{path}{_line_of(e, text)}: not valid YAML{why}") from None
    except ValueError as e:
        raise ConfigError(f"{path}: a value cannot be read ({str(e).split(';')[0]})") from None
