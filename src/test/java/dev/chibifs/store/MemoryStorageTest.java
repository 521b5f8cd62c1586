package dev.chibifs.store;

/** The in-memory store against the shared behaviour suite. */
class MemoryStorageTest extends StorageBehaviourSuite {

    @Override
    protected Storage newStorage() {
        return new MemoryStorage();
    }
}
