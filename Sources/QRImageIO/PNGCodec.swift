import CPNG

/// PNG through libpng's simplified `png_image` API, which catches libpng's `longjmp` errors itself.
enum PNGCodec {
    /// The eight bytes every PNG file starts with.
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// The IEND chunk every PNG file ends with: length 0, type, CRC.
    static let iend: [UInt8] = [0, 0, 0, 0, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82]

    /// Decodes to 8-bit gray (sRGB), composited on white when the image has alpha or a transparent colour.
    static func decode(_ bytes: [UInt8], path: String?) throws(QRImageError) -> GrayImage {
        // libpng stops after the last image row, so a file cut after its pixel data would pass: ask for IEND.
        guard bytes.count >= signature.count + iend.count, bytes.suffix(iend.count).elementsEqual(iend) else {
            throw .invalidPNG(path: path, reason: "truncated: it does not end with an IEND chunk")
        }
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        // Safe after success, failure or finish_read: it frees only what `opaque` still holds.
        defer { png_image_free(&image) }
        // libpng keeps reading from `memory` until png_image_finish_read, so both calls stay in this closure.
        let result: Result<[UInt8], QRImageError> = bytes.withUnsafeBytes { memory in
            guard png_image_begin_read_from_memory(&image, memory.baseAddress, memory.count) != 0 else {
                return .failure(.invalidPNG(path: path, reason: message(of: &image)))
            }
            let count: Int
            do throws(QRImageError) {
                count = try GrayImage.checkedPixelCount(width: Int(image.width), height: Int(image.height))
            } catch {
                return .failure(error)
            }
            image.format = UInt32(PNG_FORMAT_GRAY)
            var pixels = [UInt8](repeating: 255, count: count)
            var white = png_color(red: 255, green: 255, blue: 255)
            let finished = pixels.withUnsafeMutableBytes { buffer in
                png_image_finish_read(&image, &white, buffer.baseAddress, Int32(image.width), nil)
            }
            guard finished != 0 else { return .failure(.invalidPNG(path: path, reason: message(of: &image))) }
            return .success(pixels)
        }
        return try GrayImage(width: Int(image.width), height: Int(image.height), pixels: result.get())
    }

    /// Encodes as an 8-bit grayscale PNG.
    static func encode(_ gray: GrayImage) throws(QRImageError) -> [UInt8] {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.width = UInt32(gray.width)
        image.height = UInt32(gray.height)
        image.format = UInt32(PNG_FORMAT_GRAY)
        defer { png_image_free(&image) }
        let stride = Int32(gray.width)
        var byteCount: png_alloc_size_t = 0
        // First pass: the size only.
        guard png_image_write_to_memory(&image, nil, &byteCount, 0, gray.pixels, stride, nil) != 0, byteCount > 0
        else { throw .pngEncodingFailed(reason: message(of: &image)) }
        png_image_free(&image)
        image.opaque = nil
        image.warning_or_error = 0
        var output = [UInt8](repeating: 0, count: Int(byteCount))
        let written = output.withUnsafeMutableBytes { buffer in
            png_image_write_to_memory(&image, buffer.baseAddress, &byteCount, 0, gray.pixels, stride, nil)
        }
        guard written != 0 else { throw .pngEncodingFailed(reason: message(of: &image)) }
        return Array(output.prefix(Int(byteCount)))
    }

    /// libpng's NUL-terminated message for the last warning or error.
    private static func message(of image: inout png_image) -> String {
        let text = withUnsafeBytes(of: &image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return text.isEmpty ? "libpng gave no reason" : text
    }
}
