import CBOR

/// A CTAP2 parameter map being decoded: absent required keys are CTAP2_ERR_MISSING_PARAMETER,
/// values of the wrong type are CTAP2_ERR_CBOR_UNEXPECTED_TYPE, and unknown keys are ignored.
struct ParameterMap {
    let entries: [CBORValue: CBORValue]

    init(_ value: CBORValue) throws(CTAPError) {
        guard let entries = value.mapValue else { throw .cborUnexpectedType }
        self.entries = entries
    }

    func required(_ key: CBORValue) throws(CTAPError) -> CBORValue {
        guard let value = entries[key] else { throw .missingParameter }
        return value
    }

    func optional(_ key: CBORValue) -> CBORValue? {
        entries[key]
    }
}

extension CBORValue {
    func text() throws(CTAPError) -> String {
        guard let text = textValue else { throw .cborUnexpectedType }
        return text
    }

    func bytes() throws(CTAPError) -> [UInt8] {
        guard let bytes = bytesValue else { throw .cborUnexpectedType }
        return bytes
    }

    func array() throws(CTAPError) -> [CBORValue] {
        guard let elements = arrayValue else { throw .cborUnexpectedType }
        return elements
    }

    func parameters() throws(CTAPError) -> ParameterMap {
        try ParameterMap(self)
    }

    func bool() throws(CTAPError) -> Bool {
        guard let value = boolValue else { throw .cborUnexpectedType }
        return value
    }

    func int() throws(CTAPError) -> Int {
        switch self {
        case .unsigned, .negative:
            // Integers outside Int's range are valid CBOR but no CTAP parameter takes them.
            guard let value = intValue else { throw .invalidParameter }
            return value
        default:
            throw .cborUnexpectedType
        }
    }
}
