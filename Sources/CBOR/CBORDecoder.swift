/// The strict CTAP2 canonical CBOR reader.
///
/// It accepts exactly one definite-length data item, minimally encoded, with map keys unique and in
/// canonical order, and nothing after it. Every length is checked against the bytes that remain
/// before anything is allocated, so a hostile length prefix cannot make it reserve memory.
///
/// A relying party must also read what real authenticators send, and some write map keys in another
/// order or integers wider than needed; `requiresCanonicalForm: false` accepts those two deviations and
/// nothing else (duplicate keys, indefinite lengths, invalid UTF-8 and tags are still refused).
public struct CBORDecoder: Sendable {
    /// The deepest nesting of arrays and maps accepted. CTAP2 clients use at most four levels.
    public var maximumDepth: Int
    /// Whether map key order and minimal integer encoding are enforced (CTAP2 canonical form).
    public var requiresCanonicalForm: Bool

    public init(maximumDepth: Int = 16, requiresCanonicalForm: Bool = true) {
        self.maximumDepth = maximumDepth
        self.requiresCanonicalForm = requiresCanonicalForm
    }

    /// Decodes the single data item that makes up `bytes`.
    public func decode(_ bytes: [UInt8]) throws(CBORError) -> CBORValue {
        try decode(bytes[...])
    }

    /// Decodes the single data item that makes up `bytes`.
    public func decode(_ bytes: ArraySlice<UInt8>) throws(CBORError) -> CBORValue {
        var reader = Reader(bytes: bytes, maximumDepth: maximumDepth, canonical: requiresCanonicalForm)
        let value = try reader.readItem(depth: 0)
        guard reader.offset == bytes.endIndex else { throw .trailingBytes }
        return value
    }

    /// Decodes the data item at the start of `bytes` and returns it with the number of bytes it used.
    /// For formats that put CBOR in front of other bytes (the COSE key inside authenticator data).
    public func decodePrefix(_ bytes: [UInt8]) throws(CBORError) -> (value: CBORValue, length: Int) {
        try decodePrefix(bytes[...])
    }

    /// Decodes the data item at the start of `bytes` and returns it with the number of bytes it used.
    public func decodePrefix(_ bytes: ArraySlice<UInt8>) throws(CBORError) -> (value: CBORValue, length: Int) {
        var reader = Reader(bytes: bytes, maximumDepth: maximumDepth, canonical: requiresCanonicalForm)
        let value = try reader.readItem(depth: 0)
        return (value, reader.offset - bytes.startIndex)
    }
}

extension CBORValue {
    /// Decodes `bytes` with the default strict decoder.
    public init(decoding bytes: [UInt8]) throws(CBORError) {
        self = try CBORDecoder().decode(bytes)
    }

    /// Decodes `bytes` with the default strict decoder.
    public init(decoding bytes: ArraySlice<UInt8>) throws(CBORError) {
        self = try CBORDecoder().decode(bytes)
    }
}

/// Reads from a slice; `offset` is an index into it, so it starts at `bytes.startIndex`.
private struct Reader {
    let bytes: ArraySlice<UInt8>
    let maximumDepth: Int
    let canonical: Bool
    var offset: Int

    init(bytes: ArraySlice<UInt8>, maximumDepth: Int, canonical: Bool) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        self.canonical = canonical
        self.offset = bytes.startIndex
    }

    var remaining: Int { bytes.endIndex - offset }

    mutating func readByte() throws(CBORError) -> UInt8 {
        guard offset < bytes.endIndex else { throw .unexpectedEnd }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readBytes(_ count: Int) throws(CBORError) -> ArraySlice<UInt8> {
        guard count <= remaining else { throw .unexpectedEnd }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// Reads the argument that follows an initial byte, insisting on the shortest form.
    mutating func readArgument(_ info: UInt8) throws(CBORError) -> UInt64 {
        switch info {
        case 0..<24:
            return UInt64(info)
        case 24:
            let value = UInt64(try readByte())
            guard value >= 24 || !canonical else { throw .nonMinimalEncoding }
            return value
        case 25:
            let value = try readBigEndian(2)
            guard value > 0xFF || !canonical else { throw .nonMinimalEncoding }
            return value
        case 26:
            let value = try readBigEndian(4)
            guard value > 0xFFFF || !canonical else { throw .nonMinimalEncoding }
            return value
        case 27:
            let value = try readBigEndian(8)
            guard value > 0xFFFF_FFFF || !canonical else { throw .nonMinimalEncoding }
            return value
        case 31:
            throw .indefiniteLength
        default:
            throw .reservedAdditionalInformation
        }
    }

    mutating func readBigEndian(_ count: Int) throws(CBORError) -> UInt64 {
        var value: UInt64 = 0
        for byte in try readBytes(count) { value = value << 8 | UInt64(byte) }
        return value
    }

    /// A length or count that must fit in what is left of the input, `unit` bytes per element at least.
    mutating func readLength(_ info: UInt8, unit: Int) throws(CBORError) -> Int {
        let length = try readArgument(info)
        guard length <= UInt64(remaining / unit) else { throw .unexpectedEnd }
        return Int(length)
    }

    mutating func readItem(depth: Int) throws(CBORError) -> CBORValue {
        let initial = try readByte()
        let major = initial >> 5
        let info = initial & 0x1F
        switch major {
        case 0:
            return .unsigned(try readArgument(info))
        case 1:
            return .negative(try readArgument(info))
        case 2:
            return .bytes(Array(try readBytes(try readLength(info, unit: 1))))
        case 3:
            let raw = try readBytes(try readLength(info, unit: 1))
            guard let text = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8 }
            return .text(text)
        case 4:
            guard depth < maximumDepth else { throw .nestingTooDeep }
            let count = try readLength(info, unit: 1)
            var elements: [CBORValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count { elements.append(try readItem(depth: depth + 1)) }
            return .array(elements)
        case 5:
            guard depth < maximumDepth else { throw .nestingTooDeep }
            let count = try readLength(info, unit: 2)
            var entries: [CBORValue: CBORValue] = [:]
            entries.reserveCapacity(count)
            var previousKey: ArraySlice<UInt8>? = nil
            for _ in 0..<count {
                let keyStart = offset
                let key = try readItem(depth: depth + 1)
                let keyBytes = bytes[keyStart..<offset]
                if !canonical {
                    guard entries[key] == nil else { throw .duplicateMapKey }
                } else if let previousKey {
                    switch CanonicalOrder.compare(previousKey, keyBytes) {
                    case .ascending: break
                    case .same: throw .duplicateMapKey
                    case .descending: throw .mapKeysOutOfOrder
                    }
                }
                previousKey = keyBytes
                entries[key] = try readItem(depth: depth + 1)
            }
            return .map(entries)
        case 6:
            throw .unsupportedTag
        default:
            return try readSimple(info)
        }
    }

    mutating func readSimple(_ info: UInt8) throws(CBORError) -> CBORValue {
        switch info {
        case 20: return .bool(false)
        case 21: return .bool(true)
        case 22: return .null
        case 24: throw .unsupportedSimpleValue(try readByte())
        case 25, 26, 27: return try readFloat(info)
        case 31: throw .indefiniteLength
        case 28...30: throw .reservedAdditionalInformation
        default: throw .unsupportedSimpleValue(info)
        }
    }
}

extension Reader {
    /// A half, single or double float. Every NaN reads as the one NaN the encoder writes (0xF97E00): the payload
    /// bits carry nothing CTAP2 uses, and two NaNs that differ only there would become equal once re-encoded.
    /// In canonical form the float must also be written as the encoder writes it: in the narrowest width that
    /// holds it exactly (RFC 8949 §4.2.1), so that decoding and re-encoding give back the same bytes.
    mutating func readFloat(_ info: UInt8) throws(CBORError) -> CBORValue {
        let start = offset - 1
        var value: Double
        switch info {
        case 25: value = Double(Float16(bitPattern: UInt16(try readBigEndian(2))))
        case 26: value = Double(Float(bitPattern: UInt32(try readBigEndian(4))))
        default: value = Double(bitPattern: try readBigEndian(8))
        }
        if value.isNaN { value = .nan }
        let decoded = CBORValue.float(value)
        if canonical {
            guard decoded.encoded()[...] == bytes[start..<offset] else { throw .nonMinimalEncoding }
        }
        return decoded
    }
}

/// CTAP2 canonical key order: the shorter encoding first, equal lengths compared bytewise.
enum CanonicalOrder {
    enum Result { case ascending, same, descending }

    static func compare(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Result {
        if a.count != b.count { return a.count < b.count ? .ascending : .descending }
        for (x, y) in zip(a, b) where x != y { return x < y ? .ascending : .descending }
        return .same
    }
}
