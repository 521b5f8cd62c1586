package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.HeldFile;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.s3.Overlay.Node;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.Set;

/** What {@link S3Storage#hold} holds; its metadata is the content's, as held, which a change elsewhere gives the node anew. */
final class HeldObject implements HeldFile {
    private final S3Storage store;
    private final Node node;
    private final Metadata metadata;
    private final CacheFile content;
    private final VfsPath path;
    private boolean closed;

    HeldObject(S3Storage store, Node node, Metadata metadata, CacheFile content, VfsPath path) {
        this.store = store;
        this.node = node;
        this.metadata = metadata;
        this.content = content;
        this.path = path;
    }

    @Override
    public Metadata metadata() {
        return metadata;
    }

    @Override
    public FileHandle open(Set<OpenFlag> flags) throws IOException {
        for (OpenFlag f : flags) {
            if (f != OpenFlag.READ) {
                throw ErrnoException.of(Linux.ESTALE, path.toString(), null);
            }
        }
        synchronized (store) {
            if (closed) {
                throw new NoSuchFileException(path.toString());
            }
            ObjectHandle h = new ObjectHandle(store, node, content.reopenForReading(), false, false, false);
            h.opened = metadata;
            return h;
        }
    }

    @Override
    public void close() {
        synchronized (store) {
            if (closed) {
                return;
            }
            closed = true;
        }
        content.close();
    }
}
