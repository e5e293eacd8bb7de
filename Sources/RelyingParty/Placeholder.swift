// Module RelyingParty: work in progress.
