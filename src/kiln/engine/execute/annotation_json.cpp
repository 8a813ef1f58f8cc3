#include "kiln/engine/execute/annotation_json.h"

namespace kiln::engine {

nlohmann::json annotation_to_json(const exec::Annotation& annotation) {
  return {{"level", exec::to_string(annotation.level)},
          {"message", annotation.message},
          {"title", annotation.title},
          {"file", annotation.file},
          {"line", annotation.line},
          {"end_line", annotation.end_line},
          {"column", annotation.column},
          {"end_column", annotation.end_column}};
}

exec::Annotation annotation_from_json(const nlohmann::json& json) {
  exec::Annotation annotation;
  const auto& level = json.at("level");
  if (level.is_number_integer()) {
    annotation.level = static_cast<exec::AnnotationLevel>(level.get<int>());
  } else {
    const auto text = level.get<std::string>();
    annotation.level = text == "warning"  ? exec::AnnotationLevel::warning
                       : text == "notice" ? exec::AnnotationLevel::notice
                                          : exec::AnnotationLevel::error;
  }
  annotation.message = json.at("message");
  annotation.title = json.at("title");
  annotation.file = json.at("file");
  annotation.line = json.at("line");
  annotation.end_line = json.at("end_line");
  annotation.column = json.at("column");
  annotation.end_column = json.at("end_column");
  return annotation;
}

}  // namespace kiln::engine
