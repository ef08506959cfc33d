-- Phrases past PostgreSQL's limits. A vector keeps a lexeme's first 256 positions and none above
-- 16,383 (a higher one counts as 16,383), so a phrase (a CJK word of three letters or more too, a
-- phrase of letter pairs) that a row held only past those limits was found on SQLite and not here.
-- Since this migration a vector that lost positions has the token '#p' (no position;
-- src/domain/search/tsvector.ts, CAPPED_TOKEN): search asks such rows for a phrase's words and
-- checks the phrase against the row's text (src/layers/memory/memorySearch.ts), and the other rows
-- as before. Vectors are otherwise written as they were, so only the rows that hit a limit change,
-- and they get the token here, in SQL, without being indexed again: a lexeme with 256 positions, or
-- with the position 16,383 (a row that only reached a limit, and did not pass it, gets it too: it is
-- then checked against its text, with the same result).
--
-- Reading every vector's positions (unnest) would cost seconds per 100,000 rows, so only two kinds of
-- rows are read: those whose positions take room enough for a lexeme's 256 (the size the positions
-- add, `pg_column_size(terms) - pg_column_size(strip(terms))`, is 2 bytes a position and 2 to 3 a
-- lexeme that has any: at least 502 bytes more than 4 a lexeme with 256 positions; the vectors are
-- stored uncompressed, migrations/pg/0005), and those whose text is long enough for a word past
-- position 16,383 (a word and what separates it take 2 bytes at least; 16,383 bytes leaves a margin).
UPDATE ctx_messages_search f SET terms = f.terms || CAST('''#p''' AS tsvector)
FROM ctx_messages t
WHERE t.id = f.id
  AND (pg_column_size(f.terms) - pg_column_size(strip(f.terms)) - 4 * length(f.terms) >= 480 OR octet_length(t.text) >= 16383)
  AND EXISTS (SELECT 1 FROM unnest(f.terms) u WHERE cardinality(u.positions) >= 256 OR 16383 = ANY (u.positions));
--> statement-breakpoint
UPDATE ctx_summaries_search f SET terms = f.terms || CAST('''#p''' AS tsvector)
FROM ctx_summaries t
WHERE t.id = f.id
  AND (pg_column_size(f.terms) - pg_column_size(strip(f.terms)) - 4 * length(f.terms) >= 480 OR octet_length(t.content) >= 16383)
  AND EXISTS (SELECT 1 FROM unnest(f.terms) u WHERE cardinality(u.positions) >= 256 OR 16383 = ANY (u.positions));
