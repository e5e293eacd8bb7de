extension Array where Element == UInt8 {
    /// Base32 (RFC 4648 §6) in upper case without padding, as one-time-code secrets are written (the Key Uri Format's
    /// `secret`, CXF's `totp.secret`).
    public var base32EncodedString: String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
        var output: [UInt8] = []
        output.reserveCapacity((count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in self {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes base32 as people and other programs write it: letters in either case, with or without `=` padding,
    /// spaces and hyphens between groups ignored. Nil for any other character, for a length no encoding produces
    /// (1, 3 or 6 characters in the last group of 8), or for leftover bits that are not zero.
    public init?(base32Encoded text: String) {
        var values: [UInt8] = []
        var sawPadding = false
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "-"): continue
            case UInt8(ascii: "="):
                sawPadding = true
                continue
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(byte - UInt8(ascii: "a"))
            case UInt8(ascii: "2")...UInt8(ascii: "7"): values.append(byte - UInt8(ascii: "2") + 26)
            default: return nil
            }
            if sawPadding { return nil }  // padding only at the end
        }
        guard ![1, 3, 6].contains(values.count % 8) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(values.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for value in values {
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))
                bits -= 8
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        guard buffer == 0 else { return nil }
        self = bytes
    }
}
