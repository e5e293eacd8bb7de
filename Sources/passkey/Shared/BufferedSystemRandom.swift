import Glibc

/// The kernel's CSPRNG (`/dev/urandom`, the source `getrandom(2)` also reads once it is seeded), read 4 KiB at a
/// time: `SystemRandomNumberGenerator` makes one system call per 64-bit draw, which dominates making a million
/// passwords. The buffer is overwritten with zeros when the generator goes away.
final class BufferedSystemRandom: RandomNumberGenerator {
    private var buffer = [UInt64](repeating: 0, count: 512)
    private var position = 512
    private let descriptor: Int32

    /// Opens `/dev/urandom`; nil when it cannot be opened.
    init?() {
        descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        // One draw from the stdlib's generator (getrandom, which blocks until the kernel pool is seeded) first,
        // so /dev/urandom is never read before then.
        var system = SystemRandomNumberGenerator()
        _ = system.next()
    }

    deinit {
        for index in buffer.indices { buffer[index] = 0 }
        close(descriptor)
    }

    func next() -> UInt64 {
        if position == buffer.count { refill() }
        defer { position += 1 }
        return buffer[position]
    }

    private func refill() {
        buffer.withUnsafeMutableBytes { bytes in
            var filled = 0
            while filled < bytes.count {
                let count = read(descriptor, bytes.baseAddress! + filled, bytes.count - filled)
                if count > 0 {
                    filled += count
                } else if count == 0 || errno != EINTR {
                    fatalError("reading /dev/urandom failed: errno \(errno)")
                }
            }
        }
        position = 0
    }
}
