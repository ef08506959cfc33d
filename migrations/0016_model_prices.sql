-- What a model's tokens cost (issue 13, usage and cost): USD per million tokens, set by the
-- operator (anna provider price, PUT /api/providers/{id}/prices/{model}). A cache price left NULL
-- means the input price. Removed with its provider (foreign keys are on: src/layers/sql/Sqlite.ts).
CREATE TABLE model_prices (
  provider_id TEXT NOT NULL REFERENCES providers (id) ON DELETE CASCADE,
  model TEXT NOT NULL CHECK (model <> ''),
  input REAL NOT NULL CHECK (input >= 0),
  output REAL NOT NULL CHECK (output >= 0),
  cache_read REAL CHECK (cache_read IS NULL OR cache_read >= 0),
  cache_write REAL CHECK (cache_write IS NULL OR cache_write >= 0),
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (provider_id, model)
);
