package dev.chibifs.fuse;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The channel notifications are written through, counting each by kind in {@link RequestStats}
 * as it is written: the notices of every writer (the {@link NoticeWriter}, a request's own at
 * open or at the end of a listing, the content stored at open) pass here and nowhere else.
 * Replies do not (a request's go to the session's channel or its ring, a lock grant's queued in
 * the NoticeWriter to the request's own), so reading the header costs one read per notification,
 * none per reply; counted here, not by each of the four writers, no writer can leave one out.
 */
final class NoticeCount implements FuseChannel {

    private final FuseChannel channel;
    private final RequestStats stats;

    NoticeCount(FuseChannel channel, RequestStats stats) {
        this.channel = channel;
        this.stats = stats;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        return channel.read(dst);
    }

    @Override
    public void write(ByteBuffer... parts) throws IOException {
        ByteBuffer header = parts[0];
        // unique 0 (in either byte order): a notification, its code where a reply's error goes
        if (header.remaining() >= FuseProtocol.OUT_HEADER && header.getLong(header.position() + 8) == 0) {
            int code = header.getInt(header.position() + 4);
            stats.notified(header.order() == ByteOrder.nativeOrder() ? code : Integer.reverseBytes(code));
        }
        channel.write(parts);
    }

    @Override
    public int openBacking(int fd) throws IOException {
        return channel.openBacking(fd);
    }

    @Override
    public void closeBacking(int backingId) throws IOException {
        channel.closeBacking(backingId);
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
