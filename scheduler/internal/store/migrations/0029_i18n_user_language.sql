-- jetjob schema, version 29: the console's language per user (issue #35,
-- docs/console.md "Languages").
--
-- '' means "not chosen": the console follows the browser's Accept-Language.
-- The set of languages is the console's catalogue (package i18n); the API
-- checks a new value against it, the constraint only keeps the column short.
ALTER TABLE users
    ADD COLUMN language text NOT NULL DEFAULT '' CHECK (length(language) <= 16);
