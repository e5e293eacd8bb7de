import Crypto
import Hybrid
import TestSupport

/// Real and generated hybrid URLs to put in QR codes.
enum TestURLs {
    /// Chrome's QR code, from hybrid.json `qr_urls` (webauthn-rs `handshake.rs`): 174 characters.
    static let chrome =
        "FIDO:/162870791865632382552704231438327900152302540348097243854039966655366469794954476199158014113179232779520163209900691930075274801398564434658077048963842109321447142660"

    /// URLs for freshly made payloads with keys, secrets and fields from a seeded generator, as a client writes them.
    static func generated(count: Int, seed: UInt64) throws -> [String] {
        var random = SeededRandom(seed: seed)
        let types: [HybridRequestType] = [.getAssertion, .makeCredential, .digitalCredentialPresentation]
        return try (0..<count).map { index in
            let key = try P256.KeyAgreement.PrivateKey(rawRepresentation: random.bytes(32))
            let payload = try QRCodePayload(
                clientKey: key,
                secret: random.bytes(16),
                requestType: types[index % types.count],
                timestamp: 1_600_000_000 + random.next() % 400_000_000,
                offersLinking: random.next() & 1 == 1
            )
            return payload.url
        }
    }
}

/// PNG files built by hand, with stored (uncompressed) deflate blocks, so tests can make any colour type and bit
/// depth libpng must read, and break them on purpose.
enum HandmadePNG {
    /// A PNG of raw scanlines (each without its filter byte; filter 0 is added).
    static func make(
        width: Int, height: Int, bitDepth: UInt8, colorType: UInt8, rows: [[UInt8]],
        extraChunks: [(String, [UInt8])] = []
    ) -> [UInt8] {
        var raw: [UInt8] = []
        for row in rows { raw += [0] + row }
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png += chunk("IHDR", bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [bitDepth, colorType, 0, 0, 0])
        for (type, data) in extraChunks { png += chunk(type, data) }
        png += chunk("IDAT", zlibStored(raw))
        png += chunk("IEND", [])
        return png
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// A zlib stream of stored blocks (RFC 1950, RFC 1951 §3.2.4).
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var output: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65535, data.count - offset)
            let final: UInt8 = offset + length == data.count ? 1 : 0
            output += [
                final, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8 & 0xFF),
            ]
            output += data[offset..<(offset + length)]
            offset += length
        } while offset < data.count
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return output + bigEndian(b << 16 | a)
    }
}
