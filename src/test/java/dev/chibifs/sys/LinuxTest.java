package dev.chibifs.sys;

import jnr.constants.Constant;
import jnr.constants.platform.Errno;
import jnr.constants.platform.Fcntl;
import jnr.constants.platform.OpenFlags;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.FileSystemException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Our numbers against jnr-constants' (generated from the C headers) and libc's own texts. */
class LinuxTest {

    @Test
    void errnoNumbersAgreeWithTheHeaders() throws Exception {
        assertTrue(compare("E", name -> Errno.valueOf(name)) >= 40);
    }

    @Test
    void openAndFcntlNumbersAgreeWithTheHeaders() throws Exception {
        assertTrue(compare("O_", name -> OpenFlags.valueOf(name)) >= 15);
        assertTrue(compare("F_", name -> Fcntl.valueOf(name)) >= 8);
    }

    @Test
    void errnoTextsAreLibcs() {
        assertEquals("Transport endpoint is not connected", LibC.strerror(Linux.ENOTCONN));
        assertEquals("Resource deadlock avoided", LibC.strerror(Linux.EDEADLK));
        assertEquals("No data available", LibC.strerror(Linux.ENODATA));
        assertEquals("Operation not supported", LibC.strerror(Linux.ENOTSUP));
        assertEquals("Connection timed out", LibC.strerror(Linux.ETIMEDOUT));
        assertEquals("Too many levels of symbolic links", LibC.strerror(Linux.ELOOP));
        assertEquals("No such device", LibC.strerror(Linux.ENODEV));
    }

    @Test
    void errnoNamesAreTheHeadersSymbols() {
        assertEquals("EACCES", Linux.errnoName(Linux.EACCES));
        assertEquals("ENOENT", Linux.errnoName(Linux.ENOENT));
        assertEquals("EAGAIN", Linux.errnoName(Linux.EWOULDBLOCK));
        assertEquals("errno 4000", Linux.errnoName(4000));
    }

    @Test
    void anErrnoExceptionCarriesTheNumberAndLibcsText() {
        ErrnoException e = ErrnoException.forErrno(Linux.EXDEV, "/mnt/a");
        assertTrue(e instanceof FileSystemException);
        assertEquals(Linux.EXDEV, e.errno());
        assertEquals("/mnt/a", e.getFile());
        assertEquals("Invalid cross-device link", e.getReason());
        assertEquals("/mnt/a: Invalid cross-device link", e.getMessage());
        ErrnoException noFile = ErrnoException.forErrno(Linux.EBUSY, null);
        assertNull(noFile.getFile());
        assertEquals("Device or resource busy", noFile.getMessage());
    }

    /** Compares every int constant of Linux whose name starts with prefix and that jnr-constants knows; returns how many. */
    private static int compare(String prefix, Function<String, Constant> lookup) throws IllegalAccessException {
        int compared = 0;
        List<String> wrong = new ArrayList<>();
        for (Field f : Linux.class.getFields()) {
            if (!Modifier.isStatic(f.getModifiers()) || f.getType() != int.class || !f.getName().startsWith(prefix)) {
                continue;
            }
            Constant c;
            try {
                c = lookup.apply(f.getName());
            } catch (IllegalArgumentException unknownToJnr) {
                continue;
            }
            if (!c.defined()) {
                continue;
            }
            compared++;
            if (c.intValue() != f.getInt(null)) {
                wrong.add(f.getName() + " is " + f.getInt(null) + ", the header says " + c.intValue());
            }
        }
        assertEquals(List.of(), wrong);
        return compared;
    }
}
