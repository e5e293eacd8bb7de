// Module CTAPHID: work in progress.
