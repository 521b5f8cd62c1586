package dev.chibifs.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.chibifs.cache.CachedEntry;
import dev.chibifs.cache.ToolCache;
import dev.chibifs.policy.ContextNames;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code chibifs cache ls}: the stored tool outputs with context, id, size and age. */
@Command(name = "ls", mixinStandardHelpOptions = true,
        description = "List tool cache entries: context, id, size in bytes, age.")
final class CacheLsCommand implements Callable<Integer> {

    @Option(names = "--context", paramLabel = "NAME", description = "Only this context's entries.")
    String context;

    @Option(names = "--json", description = "A JSON array of {context, id, path, size, modified, age_seconds};"
            + " an age is negative for an entry modified in the future.")
    boolean json;

    @Mixin
    HomeOption home;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException, CommandFailure {
        if (context != null) {
            ContextNames.validate(context);
        }
        ToolCache cache = CacheStores.openExisting(home.resolve());
        List<CachedEntry> entries = cache == null ? List.of() : cache.list(context);
        Instant now = Instant.now();
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            ObjectMapper mapper = new ObjectMapper();
            ArrayNode array = mapper.createArrayNode();
            for (CachedEntry e : entries) {
                ObjectNode o = array.addObject();
                o.put("context", e.context());
                o.put("id", e.id());
                o.put("path", e.path().toUri());
                o.put("size", e.size());
                o.put("modified", e.modified().toString());
                o.put("age_seconds", Duration.between(e.modified(), now).getSeconds());
            }
            out.println(mapper.writeValueAsString(array));
        } else if (!entries.isEmpty()) {
            int ctxWidth = "CONTEXT".length();
            int idWidth = "ID".length();
            // a name with a newline would make two rows of one
            for (CachedEntry e : entries) {
                ctxWidth = Math.max(ctxWidth, ToolCache.printable(e.context()).length());
                idWidth = Math.max(idWidth, ToolCache.printable(e.id()).length());
            }
            String row = "%-" + ctxWidth + "s  %-" + idWidth + "s  %10s  %s%n";
            out.printf(row, "CONTEXT", "ID", "SIZE", "AGE");
            for (CachedEntry e : entries) {
                out.printf(row, ToolCache.printable(e.context()), ToolCache.printable(e.id()), e.size(),
                        ToolCache.shown(Duration.between(e.modified(), now)));
            }
        }
        out.flush();
        return ExitCodes.OK;
    }
}
