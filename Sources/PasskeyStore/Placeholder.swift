// Module PasskeyStore: work in progress.
