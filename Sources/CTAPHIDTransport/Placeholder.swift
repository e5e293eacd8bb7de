// Module CTAPHIDTransport: work in progress.
