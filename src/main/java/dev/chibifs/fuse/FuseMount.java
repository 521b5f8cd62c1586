package dev.chibifs.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Mounting and unmounting without libfuse: mount(2) on a /dev/fuse descriptor. */
final class FuseMount {

    private static final int MNT_DETACH = 2;

    private FuseMount() {
    }

    static FuseDevice mount(Path mountpoint, MountSpec spec) throws IOException {
        if (!spec.nonempty()) {
            try (var entries = Files.list(mountpoint)) {
                if (entries.findAny().isPresent()) {
                    // as fusermount refuses: files under a mount would be hidden, not gone, which surprises
                    throw new IOException("fuse: mountpoint is not empty (" + mountpoint + "; -o nonempty mounts over it)");
                }
            }
        }
        FuseDevice device = FuseDevice.open();
        long uid = ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
        long gid = ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:gid")).longValue();
        StringBuilder data = new StringBuilder("fd=" + device.fd() + ",rootmode=40000,user_id=" + uid + ",group_id=" + gid);
        if (spec.allowOther()) {
            data.append(",allow_other");
        }
        if (spec.defaultPermissions()) {
            data.append(",default_permissions");
        }
        spec.kernelData().forEach(d -> data.append(',').append(d));
        int rc = FuseDevice.LIBC.mount(FuseDevice.bytes(spec.fsname()), FuseDevice.bytes(mountpoint.toString()),
                FuseDevice.bytes("fuse." + spec.subtype()), spec.flags(), FuseDevice.bytes(data.toString()));
        if (rc != 0) {
            int errno = FuseDevice.errno();
            device.close();
            throw FuseDevice.failure("mount " + mountpoint, errno);
        }
        return device;
    }

    static Fusermount.Result unmount(Path mountpoint, boolean lazy) {
        int rc = FuseDevice.LIBC.umount2(FuseDevice.bytes(mountpoint.toString()), lazy ? MNT_DETACH : 0);
        if (rc == 0) {
            return new Fusermount.Result(0, "");
        }
        int errno = FuseDevice.errno();
        return new Fusermount.Result(1, FuseDevice.LIBC.strerror(errno));
    }
}
