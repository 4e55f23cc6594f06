from ultralytics import YOLO

model = YOLO("./ultralytics/cfg/models/v8/yolov8.yaml")

model.train(data="ultralytics/cfg/datasets/VisDrone.yaml", epochs=100, device=[0, 1, 2, 3], batch=128, imgsz=640, workers=12)
