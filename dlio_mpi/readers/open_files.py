"""The files a reader keeps open, and the one policy that closes them.

At most `limit` files are open at once, so that a rank's share of a large dataset never runs
into the process's open-file limit: before a file is opened with `limit` open, the least
recently used one is closed, but never

- a file opened by all ranks together (pinned): closed only by close_all;
- a file with read-ahead segments queued or being read (its handle's `inflight`): a thread
  would read through a descriptor closed, or reused by another open, under it;
- a file the caller is about to read (`keep`: the files of the step being queued).

When every open file is one of those, the new file is opened beyond the limit (the reads in
flight need their files; readers size the limit for the files in flight, so that this is rare).
Whoever keeps its own table of the handles (an epoch's built requests) watches the closes."""
from collections import OrderedDict


class OpenFiles:
    def __init__(self, limit):
        self.limit = limit
        self.pinned = set()
        self._open = OrderedDict()     # file -> handle, least recently used first
        self._watchers = []

    def __len__(self):
        return len(self._open)

    def __contains__(self, f):
        return f in self._open

    def __iter__(self):
        return iter(list(self._open))

    def get(self, f):
        """The open handle of file f, or None (its order of use unchanged)."""
        return self._open.get(f)

    def use(self, f):
        """The open handle of file f, now the most recently used, or None."""
        h = self._open.get(f)
        if h is not None:
            self._open.move_to_end(f)
        return h

    def mark_used(self, f):
        """File f, if open, is now the most recently used."""
        if f in self._open:
            self._open.move_to_end(f)

    def add(self, f, handle, pinned=False):
        """File f opened (the most recently used); pinned: opened by all ranks together."""
        self._open[f] = handle
        if pinned:
            self.pinned.add(f)

    def open(self, f, opener, keep=()):
        """The handle of file f: the open one (now the most recently used), or opener()'s
        after room is made (make_room, keep)."""
        h = self.use(f)
        if h is None:
            self.make_room(keep)
            h = opener()
            self._open[f] = h
        return h

    def closable(self, f, keep=()):
        """Whether the policy may close open file f now."""
        return f not in self.pinned and f not in keep and not self._open[f].inflight

    def make_room(self, keep=()):
        """Before a file is opened: with `limit` files open, close the least recently used one
        that may be closed (closable), while any may."""
        while len(self._open) >= self.limit:
            victim = next((f for f in self._open if self.closable(f, keep)), None)
            if victim is None:
                return
            self.close(victim)

    def close(self, f):
        """Close file f now (a pinned file too), its watchers told first; waits for its
        segments in flight, if any (the handle's close does)."""
        h = self._open.pop(f)
        self.pinned.discard(f)
        for w in list(self._watchers):
            w(f)
        h.close()

    def reopen(self, f):
        """Close file f if it is open and not pinned: its next read opens it anew, as a loader
        that opens a file per sample does."""
        if f in self._open and f not in self.pinned:
            self.close(f)

    def watch(self, closed):
        """Call closed(f) whenever the policy closes file f (before its handle is closed)."""
        self._watchers.append(closed)

    def unwatch(self, closed):
        if closed in self._watchers:
            self._watchers.remove(closed)

    def close_all(self):
        # a file's own key (its index), or a read thread's (thread, file): see PrefetchReader
        for f in sorted(self._open, key=lambda k: k if isinstance(k, tuple) else (-1, k)):
            self.close(f)
