import Synchronization

/// A scanner's current callback (the simulated radio's and bluetoothd's). `set(nil)` returns only once no call is
/// running, so nothing is delivered after `stopScanning()` returns.
final class CallbackBox: Sendable {
    private let callback = Mutex<(@Sendable ([UInt8]) -> Void)?>(nil)

    func set(_ newValue: (@Sendable ([UInt8]) -> Void)?) {
        callback.withLock { $0 = newValue }
    }

    func deliver(_ bytes: [UInt8]) {
        // Called under the lock so that `set(nil)` waits for a call in progress.
        callback.withLock { $0?(bytes) }
    }
}
