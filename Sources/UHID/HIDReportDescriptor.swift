/// Why bytes are not a HID report descriptor this parser can walk.
public enum HIDReportDescriptorError: Error, Hashable, Sendable {
    /// An item's data runs past the end of the descriptor (the item's offset is given).
    case truncatedItem(offset: Int)
}

/// The part of a HID report descriptor (USB HID 1.11 §6.2.2) a host needs to recognise a device: the usage page and
/// usage of each top-level collection, such as FIDO's `Usage Page (0xF1D0), Usage (0x01), Collection (Application)`.
///
/// Short items are a prefix byte (tag in bits 7–4, type in bits 3–2: main, global, local; data size in bits 1–0:
/// 0, 1, 2 or 4 bytes) and their data, little-endian; long items (prefix 0xFE) carry their own size and are skipped.
/// The usage page is global state (`Push`/`Pop` are followed); usages are local state, cleared after each main item.
/// A four-byte usage carries its own page in its upper half; a shorter one takes the page in effect at the main item
/// it belongs to, as in Linux's HID parser.
public struct HIDReportDescriptor: Hashable, Sendable {
    /// The usage of a collection: its page and its usage ID on that page.
    public struct Usage: Hashable, Sendable, CustomStringConvertible {
        public var page: UInt16
        public var id: UInt16

        public init(page: UInt16, id: UInt16) {
            self.page = page
            self.id = id
        }

        /// The FIDO Alliance page (0xF1D0), usage CTAPHID (0x01): a security key (CTAP 2.1 §11.2.8.1).
        public static let fidoCTAPHID = Usage(page: 0xF1D0, id: 0x01)

        public var description: String { "page 0x\(hex(page)), usage 0x\(hex(id))" }

        private func hex(_ value: UInt16) -> String {
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
    }

    /// The usages of the top-level collections, in order.
    public var topLevelUsages: [Usage]

    /// Whether a top-level collection is FIDO's CTAPHID interface.
    public var isFIDO: Bool { topLevelUsages.contains(.fidoCTAPHID) }

    /// Walks the items of a descriptor.
    /// - Throws: ``HIDReportDescriptorError/truncatedItem(offset:)`` if an item's data is cut off.
    public init(bytes: [UInt8]) throws(HIDReportDescriptorError) {
        var usages: [Usage] = []
        var usagePage: UInt16 = 0
        var pageStack: [UInt16] = []
        /// Usages since the last main item; those of four bytes carry their own page.
        var localUsages: [(value: UInt32, extended: Bool)] = []
        var depth = 0
        var offset = 0
        while offset < bytes.count {
            let prefix = bytes[offset]
            if prefix == 0xFE {
                // Long item: size, tag, data.
                guard offset + 2 < bytes.count else { throw .truncatedItem(offset: offset) }
                let size = Int(bytes[offset + 1])
                guard offset + 3 + size <= bytes.count else { throw .truncatedItem(offset: offset) }
                offset += 3 + size
                continue
            }
            let size = [0, 1, 2, 4][Int(prefix & 0x03)]
            guard offset + 1 + size <= bytes.count else { throw .truncatedItem(offset: offset) }
            var value: UInt32 = 0
            for index in 0..<size { value |= UInt32(bytes[offset + 1 + index]) << (8 * UInt32(index)) }
            offset += 1 + size
            let tag = prefix >> 4
            switch (prefix >> 2) & 0x03 {
            case 0:  // Main
                switch tag {
                case 0xA:  // Collection
                    if depth == 0 {
                        let usage = localUsages.first ?? (0, false)
                        let page = usage.extended ? UInt16(truncatingIfNeeded: usage.value >> 16) : usagePage
                        usages.append(Usage(page: page, id: UInt16(truncatingIfNeeded: usage.value)))
                    }
                    depth += 1
                case 0xC:  // End Collection
                    depth = max(0, depth - 1)
                default:
                    break
                }
                localUsages = []
            case 1:  // Global
                switch tag {
                case 0x0: usagePage = UInt16(truncatingIfNeeded: value)
                case 0xA: pageStack.append(usagePage)  // Push
                case 0xB: usagePage = pageStack.popLast() ?? usagePage  // Pop
                default: break
                }
            case 2:  // Local
                if tag == 0x0 { localUsages.append((value, size == 4)) }
            default:
                break  // Reserved item type.
            }
        }
        topLevelUsages = usages
    }
}
