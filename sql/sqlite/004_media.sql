-- Media of a family (protocol §10); see the PostgreSQL migration. The bytes are files under the data folder:
-- media/<family>/<sha256>, written to media/tmp first and renamed, so a crash never leaves a half file there.
CREATE TABLE media (
    family_id     TEXT NOT NULL,
    sha256        TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size          INTEGER NOT NULL,
    created_ms    INTEGER NOT NULL,
    referenced_ms INTEGER NOT NULL,
    PRIMARY KEY (family_id, sha256)
) WITHOUT ROWID;
