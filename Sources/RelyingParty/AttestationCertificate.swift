import Crypto

/// One DER element: its identifier octet, its contents and its whole encoding.
struct DERElement {
    var tag: UInt8
    var contents: ArraySlice<UInt8>
    var encoded: ArraySlice<UInt8>
}

/// A minimal DER reader over a byte slice: single-octet tags and definite lengths only, every length
/// checked against the bytes that remain.
struct DERReader {
    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var isAtEnd: Bool { bytes.isEmpty }

    /// The tag of the next element, without consuming it.
    var nextTag: UInt8? { bytes.first }

    mutating func read() -> DERElement? {
        let start = bytes.startIndex
        guard bytes.count >= 2 else { return nil }
        let tag = bytes[start]
        guard tag & 0x1F != 0x1F else { return nil }  // high-tag-number form
        let first = bytes[start + 1]
        var length = 0
        var headerLength = 2
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard (1...4).contains(count), bytes.count >= 2 + count else { return nil }
            for byte in bytes[(start + 2)..<(start + 2 + count)] { length = length << 8 | Int(byte) }
            headerLength += count
        }
        guard length <= bytes.count - headerLength else { return nil }
        let end = start + headerLength + length
        let element = DERElement(
            tag: tag, contents: bytes[(start + headerLength)..<end], encoded: bytes[start..<end])
        bytes = bytes[end...]
        return element
    }

    mutating func read(tag: UInt8) -> DERElement? {
        guard nextTag == tag else { return nil }
        return read()
    }
}

/// The fields of an X.509 attestation certificate that packed attestation (WebAuthn §8.2.1) constrains.
///
/// Only what those requirements need is read: version, subject attributes, the P-256 subject public
/// key, Basic Constraints and the FIDO AAGUID extension. Signatures, validity dates and the chain are not.
struct AttestationCertificate {
    /// The X.509 version number (3 for v3).
    var version: Int
    /// Subject attributes as (DER OID contents, string value) in order.
    var subject: [(oid: [UInt8], value: String)]
    /// The subject public key, if it is an EC P-256 key.
    var publicKey: P256.Signing.PublicKey?
    /// The Basic Constraints cA value, or nil when the extension is absent.
    var basicConstraintsCA: Bool?
    /// The id-fido-gen-ce-aaguid extension: whether it is critical and the 16-byte AAGUID it holds.
    var aaguidExtension: (critical: Bool, aaguid: [UInt8]?)?

    static let countryName: [UInt8] = [0x55, 0x04, 0x06]
    static let organizationName: [UInt8] = [0x55, 0x04, 0x0A]
    static let organizationalUnitName: [UInt8] = [0x55, 0x04, 0x0B]
    static let commonName: [UInt8] = [0x55, 0x04, 0x03]
    static let basicConstraints: [UInt8] = [0x55, 0x1D, 0x13]
    /// 1.3.6.1.4.1.45724.1.1.4, id-fido-gen-ce-aaguid.
    static let fidoAAGUID: [UInt8] = [0x2B, 0x06, 0x01, 0x04, 0x01, 0x82, 0xE5, 0x1C, 0x01, 0x01, 0x04]

    /// Reads a DER certificate; `nil` when its structure is not that of an X.509 certificate.
    init?(der: [UInt8]) {
        var outer = DERReader(der[...])
        guard let certificate = outer.read(tag: 0x30), outer.isAtEnd else { return nil }
        var fields = DERReader(certificate.contents)
        guard let tbs = fields.read(tag: 0x30) else { return nil }
        var reader = DERReader(tbs.contents)

        version = 1
        if let explicit = reader.read(tag: 0xA0) {
            var inner = DERReader(explicit.contents)
            guard let integer = inner.read(tag: 0x02), integer.contents.count == 1, inner.isAtEnd else {
                return nil
            }
            version = Int(integer.contents.first!) + 1
        }
        guard reader.read(tag: 0x02) != nil,  // serialNumber
            reader.read(tag: 0x30) != nil,  // signature
            reader.read(tag: 0x30) != nil,  // issuer
            reader.read(tag: 0x30) != nil,  // validity
            let subjectName = reader.read(tag: 0x30),
            let subjectPublicKeyInfo = reader.read(tag: 0x30)
        else { return nil }
        guard let subject = Self.attributes(of: subjectName) else { return nil }
        self.subject = subject
        publicKey = try? P256.Signing.PublicKey(derRepresentation: Array(subjectPublicKeyInfo.encoded))

        _ = reader.read(tag: 0x81)  // issuerUniqueID
        _ = reader.read(tag: 0x82)  // subjectUniqueID
        basicConstraintsCA = nil
        aaguidExtension = nil
        if let explicit = reader.read(tag: 0xA3) {
            var wrapper = DERReader(explicit.contents)
            guard let list = wrapper.read(tag: 0x30), wrapper.isAtEnd else { return nil }
            var extensions = DERReader(list.contents)
            while !extensions.isAtEnd {
                guard let element = extensions.read(tag: 0x30) else { return nil }
                var parts = DERReader(element.contents)
                guard let oid = parts.read(tag: 0x06) else { return nil }
                var critical = false
                if let boolean = parts.read(tag: 0x01) {
                    guard boolean.contents.count == 1 else { return nil }
                    critical = boolean.contents.first! != 0
                }
                guard let value = parts.read(tag: 0x04), parts.isAtEnd else { return nil }
                switch Array(oid.contents) {
                case Self.basicConstraints:
                    var octets = DERReader(value.contents)
                    guard let sequence = octets.read(tag: 0x30), octets.isAtEnd else { return nil }
                    var constraints = DERReader(sequence.contents)
                    if let cA = constraints.read(tag: 0x01) {
                        guard cA.contents.count == 1 else { return nil }
                        basicConstraintsCA = cA.contents.first! != 0
                    } else {
                        basicConstraintsCA = false
                    }
                case Self.fidoAAGUID:
                    var octets = DERReader(value.contents)
                    let inner = octets.read(tag: 0x04)
                    let aaguid = inner.flatMap { octets.isAtEnd && $0.contents.count == 16 ? Array($0.contents) : nil }
                    aaguidExtension = (critical, aaguid)
                default:
                    break
                }
            }
        }
        guard reader.isAtEnd else { return nil }
    }

    /// The values of subject attributes with `oid`.
    func subjectValues(_ oid: [UInt8]) -> [String] {
        subject.filter { $0.oid == oid }.map(\.value)
    }

    /// `Name ::= SEQUENCE OF SET OF AttributeTypeAndValue`, with string values decoded.
    private static func attributes(of name: DERElement) -> [(oid: [UInt8], value: String)]? {
        var result: [(oid: [UInt8], value: String)] = []
        var sets = DERReader(name.contents)
        while !sets.isAtEnd {
            guard let set = sets.read(tag: 0x31) else { return nil }
            var pairs = DERReader(set.contents)
            while !pairs.isAtEnd {
                guard let pair = pairs.read(tag: 0x30) else { return nil }
                var parts = DERReader(pair.contents)
                guard let oid = parts.read(tag: 0x06), let value = parts.read(), parts.isAtEnd else { return nil }
                // UTF8String, PrintableString, IA5String, TeletexString: read as UTF-8 (a superset of ASCII).
                let text: String
                switch value.tag {
                case 0x0C, 0x13, 0x16, 0x14:
                    guard let decoded = String(validating: value.contents, as: UTF8.self) else { return nil }
                    text = decoded
                default:
                    text = ""
                }
                result.append((Array(oid.contents), text))
            }
        }
        return result
    }
}
