package dev.chibifs.policy;

import java.util.Objects;

/**
 * Who a request acts as: the reserved SYSTEM caller, a validated context, or a guest that may
 * only read (an unmapped uid on a uid-mapped mount).
 */
public final class Caller {

    /** What kind of caller this is. */
    public enum Kind { SYSTEM, CONTEXT, GUEST }

    /** The reserved caller that may write everywhere, /sys included. */
    public static final Caller SYSTEM = new Caller(Kind.SYSTEM, "SYSTEM");

    /** A caller that reads everything and writes nothing. */
    public static final Caller GUEST = new Caller(Kind.GUEST, "guest");

    private final Kind kind;
    private final String name;

    private Caller(Kind kind, String name) {
        this.kind = kind;
        this.name = name;
    }

    /** A context caller; the name is validated by {@link ContextNames#validate}. */
    public static Caller context(String name) {
        return new Caller(Kind.CONTEXT, ContextNames.validate(name));
    }

    public Kind kind() {
        return kind;
    }

    /** The context name, "SYSTEM", or "guest". */
    public String name() {
        return name;
    }

    public boolean isSystem() {
        return kind == Kind.SYSTEM;
    }

    public boolean isContext() {
        return kind == Kind.CONTEXT;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Caller && ((Caller) o).kind == kind && ((Caller) o).name.equals(name);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, name);
    }

    @Override
    public String toString() {
        return kind == Kind.CONTEXT ? name : kind.name();
    }
}
