package dev.chibifs.store;

/** One directory entry: its name and kind, no other metadata (listing stays cheap). */
public record Entry(String name, EntryKind kind) {
}
