/// Why the strict CTAP2 decoder refused its input.
public enum CBORError: Error, Hashable, Sendable {
    /// The input ended inside a data item.
    case unexpectedEnd
    /// Bytes follow the single top-level data item.
    case trailingBytes
    /// An indefinite-length item or a stray "break" byte: CTAP2 allows definite lengths only.
    case indefiniteLength
    /// An integer, length, count or float was not written in its shortest form (a NaN other than 0xF97E00).
    case nonMinimalEncoding
    /// Map keys are not in CTAP2 canonical order (shorter encoding first, then bytewise).
    case mapKeysOutOfOrder
    /// The same key appears twice in one map.
    case duplicateMapKey
    /// A text string is not valid UTF-8.
    case invalidUTF8
    /// Arrays and maps are nested deeper than the decoder's limit.
    case nestingTooDeep
    /// A tag (major type 6): CTAP2 messages carry none.
    case unsupportedTag
    /// A simple value other than false, true and null.
    case unsupportedSimpleValue(UInt8)
    /// Additional information 28–30, reserved by RFC 8949.
    case reservedAdditionalInformation
}

extension CBORError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .unexpectedEnd: "CBOR input ended inside a data item"
        case .trailingBytes: "CBOR input has bytes after the data item"
        case .indefiniteLength: "CBOR indefinite lengths are not allowed"
        case .nonMinimalEncoding: "CBOR integer, length or float is not minimally encoded"
        case .mapKeysOutOfOrder: "CBOR map keys are not in canonical order"
        case .duplicateMapKey: "CBOR map has a duplicate key"
        case .invalidUTF8: "CBOR text string is not valid UTF-8"
        case .nestingTooDeep: "CBOR nesting is too deep"
        case .unsupportedTag: "CBOR tags are not supported"
        case .unsupportedSimpleValue(let value): "CBOR simple value \(value) is not supported"
        case .reservedAdditionalInformation: "CBOR uses reserved additional information"
        }
    }
}
