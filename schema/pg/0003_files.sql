-- Uploaded mapping and method-ID files in the PostgreSQL store (issue 19,
-- server/store/files.h): contents by content hash, and which content each
-- build has. In the SQLite mode the files live in the data directory only.

-- One row per stored content: hash is the upload's XXH3-128 in 32 lowercase
-- hex digits (high 64 bits first), size its bytes, chunks its number of
-- file_chunks rows; created_at µs since the Unix epoch.
CREATE TABLE files (
    hash text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{32}$'),
    size bigint NOT NULL CHECK (size >= 0),
    chunks bigint NOT NULL CHECK (chunks >= 1),
    created_at bigint NOT NULL
);

-- The bytes, in order of seq (0, 1, ...), each at most 4 MiB
-- (BL_FILES_CHUNK). Written before their files row, in its transaction.
CREATE TABLE file_chunks (
    hash text NOT NULL,
    seq bigint NOT NULL CHECK (seq >= 0),
    data bytea NOT NULL,
    PRIMARY KEY (hash, seq)
);

-- The file of each kind a build has (what mapping.hash / method-ids.hash
-- say in a build folder of the SQLite mode); uploaded_at µs.
CREATE TABLE build_files (
    app_id bigint NOT NULL,
    build text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('mapping', 'method-ids')),
    hash text NOT NULL REFERENCES files (hash),
    size bigint NOT NULL CHECK (size >= 0),
    uploaded_at bigint NOT NULL,
    PRIMARY KEY (app_id, build, kind)
);
