-- The search indexes take new entries into a short pending list (issue 26). Without one
-- (`fastupdate = off`, migrations/pg/0005) an append wrote each of a message's ~50 lexemes into the
-- GIN tree one by one, most of an appended message's cost. With PostgreSQL's default list (4 MB) a
-- rare word's search was 5× slower, as every search reads the whole list; at 64 kB it is merged into
-- the tree every few dozen messages by the append that fills it, searches read little of it, and one
-- appended message took 2.0–2.2 ms instead of 2.4–2.9 ms, a 1,000-message batch 1.6–2.4k messages a
-- second instead of 1.3–1.8k, with searches unchanged within noise (BENCHMARKS.md, same run).
ALTER INDEX ctx_messages_search_terms SET (fastupdate = on, gin_pending_list_limit = 64);
--> statement-breakpoint
ALTER INDEX ctx_summaries_search_terms SET (fastupdate = on, gin_pending_list_limit = 64);
