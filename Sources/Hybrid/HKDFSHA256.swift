import Basics
import Crypto

/// HKDF-SHA256 (RFC 5869) for the short keys hybrid uses, built on swift-crypto's SHA-256 with the
/// HMAC pads prepared once per key.
///
/// The Noise handshake runs a dozen HKDFs per handshake; swift-crypto's `HKDF` and `HMAC` types,
/// generic over `DataProtocol` and allocating a `SymmetricKey` per step, cost several times the SHA-256
/// work itself and made the handshake far slower than its elliptic-curve floor (see `Tools/bench
/// hybrid-core`). Results are checked against swift-crypto's `HKDF` in the tests.
enum HKDFSHA256 {
    /// `HKDF-SHA256(ikm, salt, info, length)`; an empty salt is the RFC's 32 zero bytes.
    static func derive(inputKeyMaterial: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        let pseudoRandomKey = HMACSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt)
            .authenticate(inputKeyMaterial)
        let expander = HMACSHA256(key: pseudoRandomKey)
        var output: [UInt8] = []
        output.reserveCapacity(length + 32)
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            previous = expander.authenticate(previous, info, [counter])
            output += previous
            counter &+= 1
        }
        return Array(output.prefix(length))
    }
}

/// HMAC-SHA256 with the inner and outer hash states keyed once.
struct HMACSHA256 {
    private var inner = SHA256()
    private var outer = SHA256()

    init(key: [UInt8]) {
        var block = key.count > 64 ? SHA256.hash(data: key).bytes : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        inner.update(data: block.map { $0 ^ 0x36 })
        outer.update(data: block.map { $0 ^ 0x5C })
    }

    /// The HMAC of the concatenation of `parts`.
    func authenticate(_ parts: [UInt8]...) -> [UInt8] {
        var inner = inner
        for part in parts { inner.update(data: part) }
        var outer = outer
        outer.update(data: inner.finalize().bytes)
        return outer.finalize().bytes
    }
}
