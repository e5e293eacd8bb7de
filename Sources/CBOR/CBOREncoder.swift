extension CBORValue {
    /// The CTAP2 canonical encoding: shortest arguments, definite lengths, map keys sorted by
    /// encoded length and then bytewise.
    public func encoded() -> [UInt8] {
        var output: [UInt8] = []
        encode(into: &output)
        return output
    }

    /// Appends the canonical encoding to `output`.
    public func encode(into output: inout [UInt8]) {
        switch self {
        case .unsigned(let value):
            Self.appendHead(major: 0, argument: value, to: &output)
        case .negative(let value):
            Self.appendHead(major: 1, argument: value, to: &output)
        case .bytes(let bytes):
            Self.appendHead(major: 2, argument: UInt64(bytes.count), to: &output)
            output.append(contentsOf: bytes)
        case .text(let text):
            let utf8 = text.utf8
            Self.appendHead(major: 3, argument: UInt64(utf8.count), to: &output)
            output.append(contentsOf: utf8)
        case .array(let elements):
            Self.appendHead(major: 4, argument: UInt64(elements.count), to: &output)
            for element in elements { element.encode(into: &output) }
        case .map(let entries):
            Self.appendHead(major: 5, argument: UInt64(entries.count), to: &output)
            if entries.keys.allSatisfy(\.isScalarKey) {
                for entry in entries.sorted(by: { Self.canonicallyPrecedes($0.key, $1.key) }) {
                    entry.key.encode(into: &output)
                    entry.value.encode(into: &output)
                }
            } else {
                // Keys that are arrays, maps or other values sort by their encoding, made once per key: encoding
                // them in every comparison made nested map keys cost exponential time (found by fuzzing).
                let sorted = entries.map { (key: $0.key.encoded(), value: $0.value) }
                    .sorted { CanonicalOrder.compare($0.key[...], $1.key[...]) == .ascending }
                for entry in sorted {
                    output.append(contentsOf: entry.key)
                    entry.value.encode(into: &output)
                }
            }
        case .bool(let value):
            output.append(value ? 0xF5 : 0xF4)
        case .null:
            output.append(0xF6)
        case .float(let value):
            Self.appendFloat(value, to: &output)
        }
    }

    /// Whether `canonicallyPrecedes` orders this key without encoding anything big: integers and text strings.
    var isScalarKey: Bool {
        switch self {
        case .unsigned, .negative, .text: true
        default: false
        }
    }

    /// CTAP2 canonical key order without encoding the common keys: for two integers or two text strings
    /// the order follows from their values; anything else is compared by its encoding.
    static func canonicallyPrecedes(_ a: CBORValue, _ b: CBORValue) -> Bool {
        switch (a, b) {
        case (.unsigned(let x), .unsigned(let y)), (.negative(let x), .negative(let y)):
            // Larger arguments never have shorter heads, so numeric order is encoded order.
            return x < y
        case (.unsigned(let x), .negative(let y)):
            // Equal head lengths put major type 0 first; otherwise the shorter head wins.
            return headLength(x) <= headLength(y)
        case (.negative(let x), .unsigned(let y)):
            return headLength(x) < headLength(y)
        case (.text(let x), .text(let y)):
            let (xCount, yCount) = (x.utf8.count, y.utf8.count)
            if xCount != yCount { return xCount < yCount }
            return x.utf8.lexicographicallyPrecedes(y.utf8)
        default:
            return CanonicalOrder.compare(a.encoded()[...], b.encoded()[...]) == .ascending
        }
    }

    private static func headLength(_ argument: UInt64) -> Int {
        switch argument {
        case 0..<24: 1
        case 24...0xFF: 2
        case 0x100...0xFFFF: 3
        case 0x1_0000...0xFFFF_FFFF: 5
        default: 9
        }
    }

    static func appendHead(major: UInt8, argument: UInt64, to output: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24:
            output.append(type | UInt8(argument))
        case 24...0xFF:
            output.append(type | 24)
            output.append(UInt8(argument))
        case 0x100...0xFFFF:
            output.append(type | 25)
            appendBigEndian(argument, byteCount: 2, to: &output)
        case 0x1_0000...0xFFFF_FFFF:
            output.append(type | 26)
            appendBigEndian(argument, byteCount: 4, to: &output)
        default:
            output.append(type | 27)
            appendBigEndian(argument, byteCount: 8, to: &output)
        }
    }

    private static func appendBigEndian(_ value: UInt64, byteCount: Int, to output: inout [UInt8]) {
        for shift in stride(from: (byteCount - 1) * 8, through: 0, by: -8) {
            output.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// Writes the narrowest IEEE 754 width that holds the value exactly (RFC 8949 §4.2.1).
    private static func appendFloat(_ value: Double, to output: inout [UInt8]) {
        let half = Float16(value)
        if Double(half) == value || (value.isNaN) {
            output.append(0xF9)
            appendBigEndian(UInt64(value.isNaN ? 0x7E00 : half.bitPattern), byteCount: 2, to: &output)
            return
        }
        let single = Float(value)
        if Double(single) == value {
            output.append(0xFA)
            appendBigEndian(UInt64(single.bitPattern), byteCount: 4, to: &output)
            return
        }
        output.append(0xFB)
        appendBigEndian(value.bitPattern, byteCount: 8, to: &output)
    }
}
