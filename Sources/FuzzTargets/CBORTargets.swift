import CBOR

/// The CBOR reader, strict and lenient.
enum CBORTargets {
    static let cbor: FuzzTarget = FuzzTarget(
        name: "cbor",
        summary: "CBOR decoder: accepted canonical input re-encodes identically; lenient input re-encodes canonically",
        seeds: {
            let values: [CBORValue] = [
                0, -1, 23, 24, 255, 65_536, .unsigned(UInt64.max), "", "passkey ✓", .bytes([0, 1, 2]), true, false,
                .null, [1, [2, [3]]], ["rk": true, "up": false, 1: .bytes([0xFF])],
                [
                    1: "example.com", 2: ["id": .bytes([1, 2, 3]), "name": "alice"],
                    3: [["alg": -7, "type": "public-key"]],
                ],
            ]
            // Two deviations the lenient mode accepts: a wide integer and map keys out of order.
            let lenient: [[UInt8]] = [[0x19, 0x00, 0x01], [0xA2, 0x02, 0x00, 0x01, 0x00]]
            return values.map { $0.encoded() } + lenient
        },
        run: { input in
            if let value = try? CBORDecoder().decode(input) {
                expect(value.encoded() == input, "canonical input did not re-encode to the same bytes")
                let prefix = try? CBORDecoder().decodePrefix(input)
                expect(prefix?.length == input.count, "decodePrefix disagrees with decode on the length")
            }
            if let value = try? CBORDecoder(requiresCanonicalForm: false).decode(input) {
                let encoded = value.encoded()
                expect((try? CBORDecoder().decode(encoded)) == value, "a lenient read did not re-encode canonically")
            }
        })
}
