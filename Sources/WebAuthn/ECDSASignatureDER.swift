/// ECDSA signatures in the DER form WebAuthn and CTAP carry (`SEQUENCE { INTEGER r, INTEGER s }`),
/// written directly from the fixed-width `r ‖ s` form. swift-crypto's `derRepresentation` does the same
/// through a general ASN.1 serializer; this is the signing hot path, so it is done by hand here.
public enum ECDSASignatureDER {
    /// DER for a raw signature of two equal-width big-endian integers (64 bytes for P-256).
    public static func encode(raw: [UInt8]) -> [UInt8] {
        let half = raw.count / 2
        let r = integer(raw[0..<half])
        let s = integer(raw[half...])
        var output: [UInt8] = [0x30]
        output.reserveCapacity(2 + r.count + s.count + 2)
        appendLength(r.count + s.count, to: &output)
        output += r
        output += s
        return output
    }

    /// One DER INTEGER: leading zeros dropped, a zero byte added when the top bit is set.
    private static func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var value = bytes.drop { $0 == 0 }
        if value.isEmpty { value = [0] }
        var output: [UInt8] = [0x02]
        let needsPad = value.first! & 0x80 != 0
        appendLength(value.count + (needsPad ? 1 : 0), to: &output)
        if needsPad { output.append(0) }
        output += value
        return output
    }

    private static func appendLength(_ length: Int, to output: inout [UInt8]) {
        if length < 0x80 {
            output.append(UInt8(length))
        } else if length <= 0xFF {
            output += [0x81, UInt8(length)]
        } else {
            output += [0x82, UInt8(length >> 8), UInt8(length & 0xFF)]
        }
    }
}
